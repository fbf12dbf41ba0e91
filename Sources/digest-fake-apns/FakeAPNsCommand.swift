import ArgumentParser
import DigestFakes
import Foundation

/// `digest-fake-apns`: the fake APNs server as a program, for demos, benchmarks and scripts that
/// drive a real APNs client against it. A separate executable so the shipped `digest` carries no test
/// code.
@main
struct FakeAPNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest-fake-apns",
        abstract: "A fake Apple Push Notification service (HTTP/2 over TLS) on loopback, with its own signing key, for demos and benchmarks.",
        discussion: """
            Requests go to POST /3/device/<token> with a provider token signed by the key it writes (--key-file), \
            with --key-id and --team-id. GET /stats answers what it saw as JSON. SIGTERM or Ctrl-C prints the \
            stats and exits.
            """)

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port (0: any free port).") var port = 0
    @Option(help: "Write the chosen port to this file once listening.") var portFile: String?
    @Option(help: "Write the signing key (an Apple .p8: PKCS#8 PEM) here.") var keyFile: String?
    @Option(name: .customLong("key-id"), help: "The signing key's id (the JWT's kid).") var keyID = "ABC123DEFG"
    @Option(name: .customLong("team-id"), help: "The team id (the JWT's iss).") var teamID = "DEF123GHIJ"
    @Option(help: "An apns-topic the server accepts (repeatable; default com.example.digest).") var topic: [String] = []
    @Option(help: "Latency of each answer, milliseconds, with a jitter of a tenth either way.") var delayMs = 0
    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS after a connection's first success (before it: 1).") var maxConcurrentStreams = 1000
    @Option(help: "Serve this PEM certificate…") var tlsCert: String?
    @Option(help: "…and this PEM private key (default: a self-signed certificate for 127.0.0.1 and localhost).") var tlsKey: String?
    @Option(help: "Write the certificate a client must trust (PEM) here.") var caOut: String?
    @Option(help: "Share of tokens answered 400 BadDeviceToken (by a stable hash of the token).") var badDeviceTokenRate = 0.0
    @Option(help: "Share of tokens answered 410 Unregistered (by a stable hash of the token).") var unregisteredRate = 0.0
    @Option(help: "Share of requests answered 429 TooManyRequests.") var tooManyRequestsRate = 0.0
    @Option(help: "Share of requests answered 503 ServiceUnavailable.") var unavailableRate = 0.0
    @Option(help: "Share of requests answered 500 InternalServerError.") var internalRate = 0.0
    @Option(help: "Share of requests whose connection is closed without an answer.") var dropRate = 0.0
    @Flag(help: "Answer every token 400 BadDeviceToken, as a token of the other environment is.") var wrongEnvironment = false
    @Option(help: "Append `<unix time> <delivered>` to this file every 0.2 s (a benchmark's samples, without a client polling /stats).")
    var samplesFile: String?

    func validate() throws {
        guard delayMs >= 0 else { throw ValidationError("--delay-ms must not be negative") }
        guard maxConcurrentStreams >= 1 else { throw ValidationError("--max-concurrent-streams must be positive") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
    }

    func run() async throws {
        var faults = FakeAPNsServer.Faults()
        faults.random = RandomFaults(
            latencyMilliseconds: delayMs, dropRate: dropRate, tooManyRequestsRate: tooManyRequestsRate, internalRate: internalRate,
            unavailableRate: unavailableRate)
        faults.badDeviceTokenRate = badDeviceTokenRate
        faults.unregisteredRate = unregisteredRate
        faults.wrongEnvironment = wrongEnvironment
        let tls = tlsCert.flatMap { cert in tlsKey.map { FakeFCMServer.TLS(certificatePath: cert, privateKeyPath: $0, applicationProtocols: ["h2"]) } }
        let server = try await FakeAPNsServer.start(
            host: host, port: port, tls: tls, keyID: keyID, teamID: teamID, topics: topic.isEmpty ? ["com.example.digest"] : Set(topic),
            faults: faults, maxConcurrentStreams: maxConcurrentStreams)
        if let keyFile { try server.writeKey(to: keyFile) }
        if let caOut { try server.certificatePEM.write(toFile: caOut, atomically: true, encoding: .utf8) }
        if let portFile { try "\(server.port)\n".write(toFile: portFile, atomically: true, encoding: .utf8) }
        print("fake APNs listening on \(server.url) (key id \(server.keyID), team id \(server.teamID), topics \(server.topics.sorted().joined(separator: " ")))")
        print("signing key: \(keyFile ?? "not written (--key-file)")")
        print("certificate to trust: \(caOut ?? server.certificatePath)")

        // The deliveries so far, every 0.2 s, from a timer of this process.
        let sampler = try samplesFile.map { try FakeProgram.sample(to: $0) { server.stats.delivered } }

        // Wait for SIGTERM or SIGINT, then report.
        await FakeProgram.waitForStop()
        sampler?.cancel()
        let stats = server.stats
        print("requests: \(stats.requests), delivered: \(stats.delivered), duplicates: \(stats.duplicates), provider tokens: \(stats.providerTokens)")
        print("answers: " + stats.answers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
        print("connections: \(stats.connections) (at most \(stats.maxConnections) at once), most streams on one: \(stats.maxStreamsUsed), refused streams: \(stats.refusedStreams), GOAWAYs: \(stats.goAways), most requests in flight: \(stats.maxInFlight)")
        try await server.shutdown()
    }
}
