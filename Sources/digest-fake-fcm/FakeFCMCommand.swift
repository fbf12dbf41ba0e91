import ArgumentParser
import DigestFakes
import Foundation

/// `digest-fake-fcm`: the fake FCM server as a program, for `make demo-send` and the delivery
/// benchmark. A separate executable so the shipped `digest` carries no test code.
@main
struct FakeFCMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest-fake-fcm",
        abstract: "A fake FCM HTTP v1 server on loopback, with its own service account, for demos and benchmarks.",
        discussion: """
            GET /stats answers what it saw as JSON; POST /goaway sends GOAWAY on every HTTP/2 connection (each \
            answers the streams it has and no more). SIGTERM or Ctrl-C prints the stats and exits.
            """)

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port (0: any free port).") var port = 0
    @Option(help: "Write the chosen port to this file once listening.") var portFile: String?
    @Option(help: "Write a service-account JSON (new key, this server's token endpoint) here.") var credentials: String?
    @Option(help: "The project id.") var project = "digest-test"
    @Option(help: "Access token lifetime, seconds.") var tokenLifetime = 3600
    @Option(help: "Share of 503 answers with Retry-After.") var unavailableRate = 0.0
    @Option(help: "Retry-After of the 503 answers, seconds.") var retryAfter = 1
    @Option(help: "Share of dropped connections.") var dropRate = 0.0
    @Option(help: "Share of UNREGISTERED tokens.") var unregisteredRate = 0.0
    @Option(help: "Seconds between 429 bursts (0: none).") var quotaBurstEvery = 0.0
    @Option(help: "Length of each 429 burst, seconds.") var quotaBurstLength = 0.0
    @Option(help: "Latency of each answer, milliseconds, with a jitter of a tenth either way (FCM answers in tens of milliseconds).")
    var delayMs = 0
    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS of each HTTP/2 connection (FCM's: 100).") var maxConcurrentStreams = 100
    @Option(help: "Retry-After of the 429 answers, seconds (default: none).") var quotaRetryAfter: Int?
    @Option(help: "Serve HTTPS (HTTP/2 or HTTP/1.1 by ALPN) with this PEM certificate…") var tlsCert: String?
    @Option(help: "…and this PEM private key.") var tlsKey: String?
    @Option(help: "Also accept this bearer token for a day (for load tools that cannot sign JWTs).") var staticToken: String?

    func validate() throws {
        guard delayMs >= 0 else { throw ValidationError("--delay-ms must not be negative") }
        guard maxConcurrentStreams >= 1 else { throw ValidationError("--max-concurrent-streams must be positive") }
    }

    func run() async throws {
        var faults = FakeFCMServer.Faults()
        faults.random = RandomFaults(latencyMilliseconds: delayMs, dropRate: dropRate, unavailableRate: unavailableRate)
        faults.retryAfterSeconds = retryAfter
        faults.unregisteredRate = unregisteredRate
        faults.quotaBurstEvery = quotaBurstEvery
        faults.quotaBurstLength = quotaBurstLength
        faults.quotaRetryAfterSeconds = quotaRetryAfter
        let tls = tlsCert.flatMap { cert in tlsKey.map { FakeFCMServer.TLS(certificatePath: cert, privateKeyPath: $0) } }
        let server = try await FakeFCMServer.start(
            host: host, port: port, projectID: project, tokenLifetime: tokenLifetime, faults: faults, tls: tls,
            maxConcurrentStreams: maxConcurrentStreams)
        if let credentials { try server.writeServiceAccount(to: credentials) }
        if let staticToken { server.registerAccessToken(staticToken) }
        if let portFile { try "\(server.port)\n".write(toFile: portFile, atomically: true, encoding: .utf8) }
        print("fake FCM listening on \(server.url) (project \(project))")
        if let credentials { print("service account: \(credentials)") }

        // Wait for SIGTERM or SIGINT, then report.
        await FakeProgram.waitForStop()
        let stats = server.stats
        print("requests: \(stats.requests), delivered: \(stats.delivered), duplicates: \(stats.duplicates), validated: \(stats.validated)")
        print("answers: " + stats.answers.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        if stats.http2Connections > 0 {
            print("HTTP/2 connections: \(stats.http2Connections) (at most \(stats.maxHTTP2Connections) at once), GOAWAYs: \(stats.goAways), most requests in flight: \(stats.maxInFlight)")
        }
        try await server.shutdown()
    }
}
