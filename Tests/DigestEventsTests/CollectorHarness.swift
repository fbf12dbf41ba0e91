import DigestCore
import DigestEvents
import DigestPostgres
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension StoreHarness {
    /// Runs a collector over this store on a free loopback port for `body`, with the fixed clock.
    /// With `serverKeys`, the preferences API too.
    func withCollector<T: Sendable>(
        keys: AppKeys, serverKeys: AppKeys? = nil, replyKeys: ReplyKeyFile? = nil, _ body: @Sendable @escaping (Int) async throws -> T
    ) async throws -> T {
        try await Self.withCollector(database, keys: keys, serverKeys: serverKeys, replyKeys: replyKeys, body)
    }

    private static func withCollector<D: DigestDatabase, T: Sendable>(
        _ database: D, keys: AppKeys, serverKeys: AppKeys?, replyKeys: ReplyKeyFile?, _ body: @Sendable @escaping (Int) async throws -> T
    ) async throws -> T {
        try await database.withEventSink { sink in
            var logger = Logger(label: "digest.collect.test")
            logger.logLevel = .critical  // not the server's cancellation at the end of each test
            let preferences = serverKeys.map { PreferencesAPI(store: database, serverKeys: $0, appKeys: keys, now: { now }) }
            let collector = EventCollector(
                sink: sink, keys: keys, configuration: .init(port: 0, now: { now }), preferences: preferences,
                replyKeys: replyKeys, actions: database as? any ReaderActionStore, logger: logger)
            return try await withLoopbackApplication({ collector.application(onServerRunning: $0) }, body)
        }
    }
}

/// A small HTTP client for the tests (Foundation's, over real loopback sockets).
enum HTTP {
    struct Failure: Error { let message: String }

    /// POSTs `body` to the collector on `port`; returns the status and the body.
    static func post(port: Int, path: String = "/v1/events", key: String?, body: Data) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// Any request: the status, the body and the `ETag` header.
    static func request(
        _ method: String, port: Int, path: String, key: String?, contentType: String? = nil, ifMatch: String? = nil,
        body: String? = nil
    ) async throws -> (status: Int, body: Data, etag: String?) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        if let body { request.httpBody = Data(body.utf8) }
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        if let ifMatch { request.setValue(ifMatch, forHTTPHeaderField: "If-Match") }
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return (http?.statusCode ?? 0, data, http?.value(forHTTPHeaderField: "ETag"))
    }

    static func get(port: Int, path: String) async throws -> (Int, Data) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// `{"events":[…]}` of `events` (each a JSON object's text).
    static func body(_ events: [String]) -> Data {
        Data(#"{"events":[\#(events.joined(separator: ","))]}"#.utf8)
    }

    /// One event's JSON.
    static func event(_ id: String, _ type: String, at: Int64 = StoreHarness.createdAt + 60, action: String? = nil) -> String {
        let action = action.map { #","action":"\#($0)""# } ?? ""
        return #"{"message_id":"\#(id)","type":"\#(type)"\#(action),"at":"\#(Timestamp.format(at))"}"#
    }

    static func result(_ data: Data) throws -> EventBatchResult {
        try JSONDecoder().decode(EventBatchResult.self, from: data)
    }
}
