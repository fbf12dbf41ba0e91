import ArgumentParser
import Crypto
import DigestCore
import DigestDemo
import DigestFakes
import Foundation

/// `digest-fake-webpush`: the fake Web Push service as a program, for the demo's deliveries,
/// benchmarks and scripts that drive another Web Push client against it. A separate executable so the
/// shipped `digest` carries no test code.
@main
struct FakeWebPushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest-fake-webpush",
        abstract: "A fake Web Push service (RFC 8030, HTTP/2 or HTTP/1.1 over TLS) on loopback that decrypts what it receives, for demos and benchmarks.",
        discussion: """
            Subscriptions (--subscriptions FILE: a JSON array of {"id", "privateKey", "auth", "applicationServerKey"?}, \
            the browser's P-256 private key as base64url of its 32 bytes, the 16-byte auth secret as base64url, and \
            the VAPID public key it was made with, if it must match) take POST /push/<id>; an entry with id "*" \
            stands for every id not listed. Each request's VAPID token, headers and size are checked, its body \
            decrypted (one in --decrypt-every) and answered 201. GET /stats answers what it saw as JSON. SIGTERM \
            or Ctrl-C prints the stats and exits.
            """)

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port (0: any free port).") var port = 0
    @Option(help: "Write the chosen port to this file once listening.") var portFile: String?
    @Option(help: "The subscriptions the service knows (see above).") var subscriptions: String?
    @Flag(help: "Know the demo's subscribers (digest demo --webpush-devices): their keys are remade from the id in the path.")
    var demoSubscribers = false
    @Option(help: "Latency of each answer, milliseconds, with a jitter of a tenth either way.") var delayMs = 0
    @Option(help: "Decrypt one request in this many (1: every one); the others are accepted unread.") var decryptEvery = 1
    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS of its HTTP/2 connections.") var maxConcurrentStreams = 1000
    @Flag(help: "Offer HTTP/1.1 only (ALPN), as a push service without HTTP/2.") var http1Only = false
    @Option(help: "Serve this PEM certificate…") var tlsCert: String?
    @Option(help: "…and this PEM private key (default: a self-signed certificate for 127.0.0.1 and localhost).") var tlsKey: String?
    @Option(help: "Write the certificate a client must trust (PEM) here.") var caOut: String?
    @Option(help: "Share of requests answered 429 (Retry-After: 1).") var tooManyRequestsRate = 0.0
    @Option(help: "Share of requests answered 503.") var unavailableRate = 0.0
    @Option(help: "Share of requests answered 500.") var internalRate = 0.0
    @Option(help: "Share of requests dropped without an answer.") var dropRate = 0.0
    @Option(help: "Append `<unix time> <accepted>` to this file every 0.2 s (a benchmark's samples, without a client polling /stats).")
    var samplesFile: String?

    func validate() throws {
        guard delayMs >= 0 else { throw ValidationError("--delay-ms must not be negative") }
        guard decryptEvery >= 1 else { throw ValidationError("--decrypt-every must be positive") }
        guard maxConcurrentStreams >= 1 else { throw ValidationError("--max-concurrent-streams must be positive") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
    }

    /// One entry of `--subscriptions`.
    struct Entry: Decodable {
        var id: String
        var privateKey: String
        var auth: String
        var applicationServerKey: String?
    }

    func run() async throws {
        var faults = FakeWebPushServer.Faults()
        faults.random = RandomFaults(
            latencyMilliseconds: delayMs, dropRate: dropRate, tooManyRequestsRate: tooManyRequestsRate, internalRate: internalRate,
            unavailableRate: unavailableRate)
        faults.decryptEvery = decryptEvery
        let entries: [Entry] = try subscriptions.map { path in
            do {
                return try JSONDecoder().decode([Entry].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw ValidationError("--subscriptions \(path): not a JSON array of {\"id\", \"privateKey\", \"auth\"} (\(error))")
            }
        } ?? []
        let tls = tlsCert.flatMap { cert in tlsKey.map { FakeFCMServer.TLS(certificatePath: cert, privateKeyPath: $0) } }
        let server = try await FakeWebPushServer.start(
            host: host, port: port, tls: tls, http1Only: http1Only, faults: faults, maxConcurrentStreams: maxConcurrentStreams)
        for entry in entries {
            guard let key = Base64URL.decode(entry.privateKey), let privateKey = try? P256.KeyAgreement.PrivateKey(rawRepresentation: key),
                  let auth = Base64URL.decode(entry.auth), auth.count == 16
            else {
                throw ValidationError("--subscriptions: the keys of \(entry.id) are not a 32-byte P-256 private key and a 16-byte auth secret (base64url)")
            }
            server.add(.init(id: entry.id, privateKey: privateKey, auth: auth, applicationServerKey: entry.applicationServerKey, endpoint: ""))
        }
        if demoSubscribers {
            server.lookUpOthers { id in
                // The demo's ids are 24 hex digits; anything else is no subscriber of it.
                guard id.utf8.count == 24, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
                return {
                    let secrets = DemoWebPush.secrets(subscriber: id)
                    return (secrets.privateKey, secrets.auth)
                }
            }
        }
        if let caOut { try String(contentsOfFile: server.certificatePath, encoding: .utf8).write(toFile: caOut, atomically: true, encoding: .utf8) }
        if let portFile { try "\(server.port)\n".write(toFile: portFile, atomically: true, encoding: .utf8) }
        print("fake Web Push service listening on \(server.origin) (\(http1Only ? "HTTP/1.1" : "HTTP/2 or HTTP/1.1")), \(entries.count) subscription\(entries.count == 1 ? "" : "s")\(demoSubscribers ? " and the demo's" : ""), endpoints \(server.origin)/push/<id>")
        print("certificate to trust: \(caOut ?? server.certificatePath)")

        let sampler = try samplesFile.map { path in try FakeProgram.sample(to: path) { server.stats.delivered + server.stats.repeats } }

        await FakeProgram.waitForStop()
        sampler?.cancel()
        let stats = server.stats
        print("requests: \(stats.requests) (\(stats.http2Requests) over HTTP/2), subscriptions delivered to: \(stats.delivered), more to the same: \(stats.repeats), decrypted: \(stats.decrypted), duplicate messages: \(stats.duplicateMessages), VAPID tokens: \(stats.vapidTokens)")
        print("answers: " + stats.answers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
        print("HTTP/2 connections: \(stats.http2Connections), GOAWAYs: \(stats.goAways), most requests in flight: \(stats.maxInFlight)")
        try await server.shutdown()
    }
}
