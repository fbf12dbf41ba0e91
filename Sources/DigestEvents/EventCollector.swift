package import DigestCore
package import DigestStore
import Foundation
package import Hummingbird
package import Logging

/// The HTTP service apps post delivery and open events to (`digest collect`, docs/009-events.md).
///
/// Routes: `POST /v1/events` with `Authorization: Bearer <app key>` and
/// `{"events":[{"message_id":"…","type":"opened","at":"2026-11-23T09:14:03Z"}]}`, answered 202 with
/// `{"accepted":N,"duplicates":N,"rejected":[{"index":i,"reason":"…"}]}` (401 without a valid key,
/// 400 for a body that is not such JSON, 413 over 1 MB or 500 events); `GET /healthz`.
///
/// ```swift
/// try await database.withEventSink { sink in
///     let collector = EventCollector(sink: sink, keys: try AppKeys(path: "keys.txt"), configuration: .init(port: 8090))
///     try await collector.application().runService()
/// }
/// ```
package struct EventCollector<Sink: EventSink>: Sendable {
    /// Where the collector listens, and its clock.
    package struct Configuration: Sendable {
        package var host = "127.0.0.1"
        /// 0 picks a free port (see `onServerRunning`).
        package var port = 8090
        /// Now, in Unix seconds: what `at` is checked against and `received_at` records.
        package var now: @Sendable () -> Int64 = Configuration.systemNow

        package init(host: String = "127.0.0.1", port: Int = 8090, now: @escaping @Sendable () -> Int64 = Configuration.systemNow) {
            self.host = host
            self.port = port
            self.now = now
        }

        /// The system clock, in Unix seconds.
        @Sendable package static func systemNow() -> Int64 { Int64(Date().timeIntervalSince1970) }
    }

    package let sink: Sink
    package let keys: AppKeys
    package let configuration: Configuration
    package let logger: Logger
    /// The preferences API for the publisher's backend (`--server-key-file`); `nil`: not served.
    package let preferences: PreferencesAPI?
    /// The secrets that verify the buttons' `reply_key` (`--reply-key-file`); `nil`: every press of
    /// `fewer`, `pause` or `off` is refused `bad_reply_key`.
    package let replyKeys: ReplyKeyFile?
    /// Where a press is applied to its reader's preferences (the store); `nil`: presses are only
    /// recorded.
    package let actions: (any ReaderActionStore)?

    package init(
        sink: Sink, keys: AppKeys, configuration: Configuration, preferences: PreferencesAPI? = nil, replyKeys: ReplyKeyFile? = nil,
        actions: (any ReaderActionStore)? = nil, logger: Logger = Logger(label: "digest.collect")
    ) {
        self.sink = sink
        self.keys = keys
        self.configuration = configuration
        self.preferences = preferences
        self.replyKeys = replyKeys
        self.actions = actions
        self.logger = logger
    }

    package func router() -> Router<BasicRequestContext> {
        let router = Router()
        let sink = self.sink, keys = self.keys, now = configuration.now, logger = self.logger
        let replyKeys = self.replyKeys, actions = self.actions
        router.get("healthz") { _, _ in "ok\n" }
        preferences?.add(to: router)
        router.post("v1/events") { request, _ -> Response in
            guard let header = request.headers[.authorization], header.hasPrefix("Bearer "), keys.accepts(String(header.dropFirst(7))) else {
                var headers = HTTPFields()
                headers[.wwwAuthenticate] = "Bearer"
                throw HTTPError(.unauthorized, headers: headers, message: "an app key is required: Authorization: Bearer <key>")
            }
            if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > EventBatch.maxBodyBytes {
                throw HTTPError(.contentTooLarge, message: "the body is over \(EventBatch.maxBodyBytes) bytes")
            }
            var request = request
            let buffer = try await request.collectBody(upTo: EventBatch.maxBodyBytes)
            let received = now()
            var batch: EventBatch
            do {
                batch = try EventBatch.parse(Array(buffer.readableBytesView), now: received)
            } catch let error as EventBodyError {
                throw HTTPError(error.code == .notJSON ? .badRequest : .contentTooLarge, message: error.message)
            }
            // Presses that change preferences need their message's reply key; refused ones are not recorded.
            let presses = batch.screenReplyKeys(replyKeys?.keys)
            var result = try await sink.record(batch.events, now: received)
            // Applied after recording, the request's presses in one transaction: a press the store
            // refused (unknown message, before it) changes nothing; a test send's is not in the
            // outbox (``ActionOutcome/unknownMessage``): answered in `test`, nothing changed.
            if let actions, !presses.isEmpty {
                let refused = Set(result.rejected.map(\.index))
                let applied = presses.filter { !refused.contains($0.0.index) }
                let outcomes = try await actions.applyActions(
                    applied.map { ButtonPress($0.1, messageID: $0.0.event.messageID, at: $0.0.event.at) }, recordedAt: received)
                if logger.logLevel <= .debug {
                    for ((_, action), outcome) in zip(applied, outcomes) {
                        logger.debug("action", metadata: ["digest.action": "\(action.rawValue)", "digest.outcome": "\(outcome)"])
                    }
                }
            }
            result.rejected = (result.rejected + batch.rejected).sorted { $0.index < $1.index }
            logger.debug(
                "events", metadata: ["digest.accepted": "\(result.accepted)", "digest.duplicates": "\(result.duplicates)", "digest.rejected": "\(result.rejected.count)"])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return Response(
                status: .accepted, headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(result))))
        }
        return router
    }

    /// The collector as a Hummingbird application (a `Service`: run it with `runService()` or in a
    /// `ServiceGroup`, which shuts it down gracefully on SIGTERM).
    package func application(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        Application(
            router: router(),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "digest-collect"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }
}
