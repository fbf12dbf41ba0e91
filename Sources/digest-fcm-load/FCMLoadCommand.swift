import ArgumentParser
import AsyncHTTPClient
import DigestNIO
import DigestSender
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// `digest-fcm-load`: async-http-client alone against the fake FCM server. It posts prepared
/// `messages:send` requests (the bodies `scripts/bench-send.sh` gives wrk) with a fixed number in
/// flight through `digest send`'s client configuration: no outbox, no OAuth, no outcomes. What it
/// reaches is the ceiling of any sender built on async-http-client on the machine it runs on.
@main
struct FCMLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest-fcm-load",
        abstract: "Post prepared FCM requests through async-http-client, N in flight, and report requests/s and CPU time.",
        discussion: """
            exchange: the sender's own request path (HTTP2Exchange, one worker per slot on an event loop \
            of the client, the request pinned to that loop). async: async-http-client's async API \
            (HTTPClientRequest, body collected), workers on the global executor.
            """)

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case exchange, async
    }

    @Option(help: "The fake server's base URL.") var endpoint: String
    @Option(help: "The project id.") var project = "digest-test"
    @Option(help: "The bearer token (the fake server's --static-token).") var token = "bench-token"
    @Option(help: "Requests in flight at once.") var concurrency = 64
    @Option(help: "Seconds to post for.") var seconds = 10.0
    @Option(help: "Event loops of the client (default: digest send's).") var eventLoops = HTTPClient.Configuration.pushSenderEventLoops
    @Option(help: "Which API path to measure: \(Mode.allCases.map(\.rawValue).joined(separator: ", ")).") var mode = Mode.exchange

    func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: eventLoops)
        let client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: .pushSender(concurrency: concurrency))
        let url = "\(endpoint)/v1/projects/\(project)/messages:send"
        let bodies = Self.bodies()
        let result: Result<(Int, Int), any Error>
        let start = ContinuousClock.now
        let cpuStart = Self.cpuSeconds()
        do {
            let deadline = start + .seconds(seconds)
            switch mode {
            case .exchange: result = .success(try await exchange(client: client, url: url, bodies: bodies, until: deadline))
            case .async: result = .success(try await plain(client: client, url: url, bodies: bodies, until: deadline))
            }
        } catch {
            result = .failure(error)
        }
        let elapsed = (ContinuousClock.now - start) / .seconds(1)
        let cpu = Self.cpuSeconds() - cpuStart
        try await client.shutdown()
        try await group.shutdownGracefully()
        let (requests, failures) = try result.get()
        print("mode: \(mode.rawValue), concurrency: \(concurrency)")
        print("requests: \(requests), failures: \(failures), seconds: \(String(format: "%.2f", elapsed))")
        print("requests/s: \(Int(Double(requests) / elapsed))")
        print("cpu seconds: \(String(format: "%.3f", cpu)), cpu µs/request: \(String(format: "%.1f", cpu * 1e6 / Double(max(requests, 1))))")
        if failures > 0 { throw ExitCode.failure }
    }

    /// The sender's path: HTTP2Exchange, each worker preferring one event loop and pinning its requests there.
    private func exchange(client: HTTPClient, url: String, bodies: [ByteBuffer], until deadline: ContinuousClock.Instant) async throws -> (Int, Int) {
        // A worker a connection: over HTTP/1.1 each carries one request at a time.
        let exchange = HTTP2Exchange(client: client, url: url, http1Connections: concurrency)
        let executors = client.eventLoopGroup.makeIterator().map { EventLoopExecutor($0) }
        let token = self.token
        return try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for worker in 0..<concurrency {
                let executor = executors[worker % executors.count]
                group.addTask(executorPreference: executor) {
                    var done = 0, failed = 0, next = worker
                    while ContinuousClock.now < deadline {
                        let answer = try await exchange.post(bodies[next % bodies.count], token: token, on: executor.eventLoop, timeout: .seconds(30))
                        if answer.status == 200 { done += 1 } else { failed += 1 }
                        next += concurrency
                    }
                    return (done, failed)
                }
            }
            return try await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
        }
    }

    /// async-http-client's async API, as its README shows it.
    private func plain(client: HTTPClient, url: String, bodies: [ByteBuffer], until deadline: ContinuousClock.Instant) async throws -> (Int, Int) {
        var prepared = HTTPClientRequest(url: url)
        prepared.method = .POST
        prepared.headers.add(name: "Authorization", value: "Bearer \(token)")
        prepared.headers.add(name: "Content-Type", value: "application/json; charset=UTF-8")
        let template = prepared
        return try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var done = 0, failed = 0, next = worker
                    while ContinuousClock.now < deadline {
                        var request = template
                        request.body = .bytes(bodies[next % bodies.count])
                        let response = try await client.execute(request, timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 64 * 1024)
                        if response.status == .ok { done += 1 } else { failed += 1 }
                        next += concurrency
                    }
                    return (done, failed)
                }
            }
            return try await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
        }
    }

    /// The 1,000 request bodies `scripts/bench-send.sh` prepares for wrk, byte for byte.
    static func bodies() -> [ByteBuffer] {
        (1...1000).map { i in
            let padding = String(repeating: "x", count: 140)
            return ByteBuffer(
                string: #"{"message":{"token":"bench-token-\#(i)-\#(padding)","#
                    + #""data":{"digest_id":"2026-W46:u\#(i)","deep_link":"https://digest.example/weekly/2026-W46"},"#
                    + #""android":{"collapse_key":"digest-2026-W46","ttl":"604800s","priority":"normal","data":{"title":"Your week in reading","#
                    + #""body":"5 articles, 42 minutes\n• One\n• Two\n• Three","type":"BigText","actions":"[]"}}}}"#)
        }
    }

    /// User plus system CPU time of this process so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
