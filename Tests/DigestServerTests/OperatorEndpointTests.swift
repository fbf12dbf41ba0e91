import DigestServer
import DigestTesting
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `/healthz` and `/metrics` over real HTTP on loopback.
@Suite struct OperatorEndpointTests {
    /// GET `url`: status, Content-Type and body.
    static func get(_ url: String) async throws -> (Int, String?, String) {
        var request = URLRequest(url: URL(string: url)!)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return (http?.statusCode ?? 0, http?.value(forHTTPHeaderField: "Content-Type"), String(decoding: data, as: UTF8.self))
    }

    @Test func healthAndMetricsAnswerAndEverythingElseIs404() async throws {
        let ready = Mutex(true)
        let metrics = "# TYPE digest_sender_sent_total counter\ndigest_sender_sent_total 7\n"
        let endpoint = OperatorEndpoint(
            configuration: .init(port: 0),
            health: {
                let isReady = ready.withLock { $0 }
                return .init(isReady: isReady, checks: [.init("sender", isReady ? "sending" : "stopping"), .init("credentials", "token valid for 60 s")])
            },
            metrics: { metrics })
        try await withLoopbackApplication({ endpoint.application(onServerRunning: $0) }) { port in
            let base = "http://127.0.0.1:\(port)"
            let scraped = try await Self.get("\(base)/metrics")
            #expect(scraped.0 == 200 && scraped.2 == metrics)
            #expect(scraped.1 == "text/plain; version=0.0.4; charset=utf-8")

            let healthy = try await Self.get("\(base)/healthz")
            #expect(healthy.0 == 200 && healthy.1 == "text/plain; charset=utf-8")
            #expect(healthy.2 == "ok\nsender: sending\ncredentials: token valid for 60 s\n")
            ready.withLock { $0 = false }
            let unhealthy = try await Self.get("\(base)/healthz")
            #expect(unhealthy.0 == 503)
            #expect(unhealthy.2 == "unavailable\nsender: stopping\ncredentials: token valid for 60 s\n")

            for path in ["/", "/metrics/x", "/healthz/x", "/healthzz", "/api/users"] {
                #expect(try await Self.get(base + path).0 == 404, "\(path)")
            }
        }
    }

    @Test func healthTextHasOneLinePerCheck() {
        #expect(OperatorEndpoint.Health(isReady: true, checks: []).text == "ok\n")
        #expect(OperatorEndpoint.Health(isReady: false, checks: [.init("a", "b")]).text == "unavailable\na: b\n")
    }
}
