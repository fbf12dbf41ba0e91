public import AsyncHTTPClient
import CoreMetrics
import DigestCore
import DigestNIO
public import DigestStore
import DigestThreads
import Foundation
public import Logging
public import NIOCore
import NIOHTTP1
public import ServiceLifecycle
import Synchronization

/// The reference outbox consumer: leases due messages, posts each to FCM HTTP v1
/// (`{endpoint}/v1/projects/{project_id}/messages:send`) with a bounded number in flight, and settles
/// each by FCM's answer (docs/007-rules-and-limits.md, "FCM errors and what the sender does").
///
/// Requests are spread over several lanes, one HTTP/2 connection each (over `https`, the sender's own
/// connection driven at the frame level, ``FCMExchange``; else one client of ``connections``): FCM
/// allows 100 concurrent streams a connection and answers in tens of milliseconds, so one connection
/// carries at most about 100 / latency messages a second (1,250 at 80 ms) and the default quota of
/// 10,000 a second needs about ten. Over HTTP/1.1 (a plain `http` endpoint, a server without `h2`) a
/// connection carries one request at a time: one per lane. A request's deadline
/// (``Configuration/requestTimeout``) counts from when it is written. Sends are paced to
/// ``Configuration/ratePerMinute``.
///
/// A `Service`: on graceful shutdown (SIGTERM in a `ServiceGroup`) it sends nothing new, lets the
/// requests in flight finish and be settled, releases the leases it still holds, and returns.
///
/// ```swift
/// let sender = FCMSender(database: .sqlite(path: "digest.sqlite"), account: account, client: client,
///                        tokens: tokens, configuration: .init(), logger: logger)
/// let summary = try await sender.send()
/// ```
public struct FCMSender<Database: DigestPipelineStore>: Service {
    /// How the sender works.
    public struct Configuration: Sendable {
        /// FCM's base URL; the fake server's in tests.
        public var endpoint = "https://fcm.googleapis.com"
        /// Requests in flight at once, spread evenly over the connections: keep each connection's share
        /// at most the server's SETTINGS_MAX_CONCURRENT_STREAMS (FCM's: 100). The default, 12 connections
        /// of 100, reaches FCM's default quota (10,000 a second) up to about 120 ms of latency. Over
        /// HTTP/1.1 each connection carries one request at a time, whatever this says.
        public var concurrency = 1_200
        /// At most this many requests in any minute (nil: no limit). The default is FCM's default quota
        /// for a project, 600,000 a minute; several senders of one project share it.
        public var ratePerMinute: Int? = 600_000
        /// Return once nothing due is ready, waiting for a retry, or leased.
        public var drain = false
        /// FCM's dry run (`validate_only`): check every due message, deliver and change nothing.
        public var validateOnly = false
        /// How long a lease holds; held leases are extended every third of it. Keep it well above
        /// `requestTimeout`: a lease must outlive the slowest request.
        public var leaseSeconds: Int64 = 60
        /// Messages leased at once (default: twice the concurrency).
        public var leaseBatch: Int?
        /// A message that failed this many times is `dead`.
        public var maxAttempts = 12
        /// Pause between looks at an empty outbox.
        public var pollInterval: Duration = .seconds(1)
        /// One request's deadline, from when it is written: waiting for a connection or a stream does
        /// not count.
        public var requestTimeout: TimeAmount = .seconds(30)
        /// Over `https`, post on the sender's own HTTP/2 connections, one per client, driven at the
        /// frame level (no per-request stream channel or HTTP/1 codec); the clients then carry only
        /// what such a connection cannot (a server that does not choose `h2`). False: every request
        /// through the clients, which choose the protocol themselves: over `https` the sender then
        /// cannot tell HTTP/1.1 from HTTP/2 and does not hold each connection to one request.
        public var ownHTTP2Connections = true
        /// A PEM file of extra trusted CA certificates for the sender's own connections (give the
        /// clients the same).
        public var caFile: String?
        public var retry = RetryPolicy()
        /// The sender's clock in Unix seconds: what is due, leases, retry times (`Retry-After` dates
        /// included), holds and expiry all follow it (tests set a fixed instant). Nothing else in the
        /// sender reads the calendar; waits within a run (pacing, the quota hold) use a monotonic clock.
        public var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
        /// The lease owner written to the outbox: host and process by default.
        public var owner = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"

        public init() {}
    }

    public let database: Database
    /// The Firebase project messages are sent for.
    public let projectID: String
    public let configuration: Configuration
    private let client: HTTPClient
    private let tokens: AccessTokenProvider
    private let logger: Logger
    private let metrics = SenderMetrics()
    /// One per connection: `client`'s, then each of `connections`'.
    private let exchanges: [FCMExchange]

    /// `client` fetches access tokens and carries requests; `connections` are more clients on the same
    /// event loops to spread requests over (one HTTP/2 connection each; the caller shuts them down).
    public init(database: Database, projectID: String, client: HTTPClient, connections: [HTTPClient] = [],
                tokens: AccessTokenProvider, configuration: Configuration, logger: Logger) {
        self.database = database
        self.projectID = projectID
        self.client = client
        self.tokens = tokens
        self.configuration = configuration
        self.logger = logger
        let url = "\(configuration.endpoint)/v1/projects/\(projectID)/messages:send"
        let connector = configuration.ownHTTP2Connections ? FCMConnector(url: url, caFile: configuration.caFile) : nil
        let clients = [client] + connections
        // Over HTTP/1.1 an exchange carries one request at a time for each lane on it.
        let lanes = RequestLanes.count(
            exchanges: clients.count, eventLoops: Array(client.eventLoopGroup.makeIterator()).count, concurrency: configuration.concurrency)
        self.exchanges = clients.enumerated().map { index, client in
            let http1 = RequestLanes.lanes(onExchange: index, of: clients.count, count: lanes)
            return connector.map { FCMExchange(client: client, url: url, connector: $0, http1Connections: http1) }
                ?? FCMExchange(client: client, url: url, http1Connections: http1)
        }
    }

    /// For the project of a service-account key.
    public init(database: Database, account: ServiceAccount, client: HTTPClient, connections: [HTTPClient] = [],
                tokens: AccessTokenProvider, configuration: Configuration, logger: Logger) {
        self.init(
            database: database, projectID: account.projectID, client: client, connections: connections, tokens: tokens,
            configuration: configuration, logger: logger)
    }

    /// `Service`: sends until shut down (or, with `drain`, until done).
    public func run() async throws {
        _ = try await send()
    }

    /// Sends until shut down or drained; throws the reason when FCM or the credentials stop it.
    public func send() async throws -> SendSummary {
        let stop = StopFlag()
        return try await withGracefulShutdownHandler {
            try await self.send(stop: stop)
        } onGracefulShutdown: {
            stop.request()
        }
    }

    /// Sends until `stop` is requested or the outbox is drained.
    ///
    /// Three tasks share the store's outbox consumer (its calls run one at a time, in order): the
    /// dispatcher leases and sends, the writer settles outcomes in batches, the lease keeper extends
    /// every lease held every third of its length. A message counts as in flight from its request
    /// until its outcome is written, so a sender killed at any moment has delivered without
    /// recording at most what it had in flight.
    func send(stop: StopFlag) async throws -> SendSummary {
        let started = ContinuousClock.now
        _ = try await tokens.token()  // bad credentials stop here, before anything is leased
        defer { for exchange in exchanges { exchange.closeConnection() } }
        return try await database.withOutboxConsumer { consumer in
            let session = SendSession(consumer: consumer, stop: stop)
            let fatal = try await run(session)
            var result = session.summary.value.withLock { $0 }
            result.seconds = (ContinuousClock.now - started).seconds
            if let fatal { throw fatal }
            return result
        }
    }

    /// The writer, the lease keeper and the dispatcher of one call; returns the error that stopped
    /// the sender, if one did.
    private func run(_ session: SendSession<Database.Consumer>) async throws -> SenderError? {
        let owner = configuration.owner, maxAttempts = configuration.maxAttempts, leaseSeconds = configuration.leaseSeconds
        let logger = self.logger
        let dispatched = StopFlag()
        // The writer and the dispatcher run on an event loop of the client too: the messages' tasks
        // they wake are on those loops, and a loop wakes them back without a hop through the
        // concurrency pool.
        let control = EventLoopExecutor(client.eventLoopGroup.next())
        return try await withThrowingTaskGroup(of: SenderError?.self) { group in
            group.addTask(executorPreference: control) {
                while true {
                    let items = await session.settlements.takeAll()
                    if items.isEmpty { return nil }
                    let batch = items.map(\.settlement)
                    let applied: Int
                    do {
                        applied = try await session.inStoreOrder {
                            let applied = try await session.consumer.settle(batch, owner: owner, now: configuration.clock(), maxAttempts: maxAttempts)
                            session.book.settled(batch.lazy.map(\.id))
                            return applied
                        }
                    } catch {
                        session.settlements.fail(items, with: error)
                        throw error
                    }
                    for item in items { item.waiter?.resume() }
                    if applied < batch.count {
                        // Another sender reclaimed them after our lease ran out; its outcome stands.
                        logger.warning("outcomes of lost leases not recorded", metadata: ["count": "\(batch.count - applied)"])
                    }
                }
            }
            if !configuration.validateOnly {
                group.addTask {
                    // The lease keeper: runs whatever the dispatcher waits on.
                    while !dispatched.isRequested {
                        try await dispatched.sleep(for: .seconds(Double(leaseSeconds) / 3))
                        if dispatched.isRequested { break }
                        let (ids, lost) = try await session.inStoreOrder {
                            let ids = session.book.held
                            let kept = try await session.consumer.extendLeases(ids: ids, owner: owner, until: configuration.clock() + leaseSeconds)
                            return (ids, session.book.extended(asked: ids, kept: kept))
                        }
                        if lost > 0 {
                            logger.warning("leases lapsed before they were extended: messages not sent yet are left to whoever holds them now",
                                           metadata: ["lost": "\(lost)", "held": "\(ids.count)"])
                        }
                    }
                    return nil
                }
            }
            group.addTask(executorPreference: control) {
                defer {
                    dispatched.request()
                    session.settlements.close()
                }
                return try await self.dispatch(session)
            }
            var fatal: SenderError?
            for try await result in group where result != nil { fatal = result }
            return fatal
        }
    }

    /// Leases (or, dry, reads) and starts one task per message: at most `concurrency` requests at
    /// once, and as many more answered and waiting for their outcome to be written.
    private func dispatch(_ session: SendSession<Database.Consumer>) async throws -> SenderError? {
        let configuration = self.configuration
        let batchSize = configuration.leaseBatch ?? max(16, configuration.concurrency * 2)
        let openPerRequest = configuration.validateOnly ? 1 : 2
        let clock = ContinuousClock()
        let stop = session.stop
        var buffer: [LeasedMessage] = []
        var head = 0
        var lastEmptyFetch: ContinuousClock.Instant?
        var scanCursor: Int64 = 0  // dry run: the last id read
        // A burst of at most a second's worth, or the requests in flight.
        var pacer = configuration.ratePerMinute.map { RatePacer(perMinute: $0, burst: min(configuration.concurrency, max(1, $0 / 60))) }
        metrics.ratePerSecond.record(pacer.map(\.perSecond) ?? 0)
        // Each message's task runs on an event loop of the client, and its request is pinned to that
        // loop: the request's start, its answer and the task waiting for it share one thread.
        var lanes = RequestLanes(
            exchanges: exchanges, eventLoops: Array(client.eventLoopGroup.makeIterator()), concurrency: configuration.concurrency,
            openPerRequest: openPerRequest)

        return try await withThrowingTaskGroup(of: Int.self) { requests in
            while session.fatal.value == nil && !stop.isRequested {
                // Refill.
                if buffer.count - head < configuration.concurrency, lastEmptyFetch.map({ clock.now - $0 >= configuration.pollInterval }) ?? true {
                    let now = configuration.clock()
                    let batch: [LeasedMessage]
                    if configuration.validateOnly {
                        batch = try await session.consumer.peekDue(afterID: scanCursor, limit: batchSize, now: now)
                        scanCursor = batch.last?.id ?? scanCursor
                    } else {
                        batch = try await session.inStoreOrder {
                            session.book.leased(
                                try await session.consumer.lease(
                                    owner: configuration.owner, limit: batchSize, now: now, leaseSeconds: configuration.leaseSeconds,
                                    maxAttempts: configuration.maxAttempts, providers: [.fcm]))
                        }
                    }
                    if head > 0 && head == buffer.count {
                        buffer.removeAll(keepingCapacity: true)
                        head = 0
                    }
                    buffer += batch
                    lastEmptyFetch = batch.isEmpty ? clock.now : nil
                    if !batch.isEmpty { logger.debug("leased", metadata: ["count": "\(batch.count)"]) }
                }
                // Nothing to do: finished, or wait for more.
                if head == buffer.count && lanes.running == 0 {
                    if configuration.validateOnly { break }
                    if configuration.drain {
                        let backlog = try await session.consumer.backlog(now: configuration.clock())
                        if backlog.isEmpty {
                            session.summary.value.withLock {
                                $0.waiting = backlog.waiting
                                $0.nextDue = backlog.nextDue
                            }
                            break
                        }
                    }
                    try await stop.sleep(for: min(configuration.pollInterval, .milliseconds(100)))
                    continue
                }
                // Start while there is room.
                while head < buffer.count && !stop.isRequested && session.fatal.value == nil, let lane = lanes.roomiest() {
                    // FCM asked every connection to slow down (a 429 with Retry-After).
                    if let until = session.quotaHold.until, until > clock.now {
                        try await stop.sleep(for: until - clock.now)
                        if stop.isRequested { break }
                    }
                    if var paced = pacer {
                        let wait = paced.reserve(now: clock.now)
                        pacer = paced
                        if wait > .zero {
                            // At least a millisecond: sleeping costs more than that; the slots missed
                            // meanwhile are still free and the next sends take them at once.
                            let slept = max(wait, .milliseconds(1))
                            metrics.pacedMicroseconds.increment(by: Int64(slept.seconds * 1e6))
                            try await stop.sleep(for: slept)
                        }
                        if stop.isRequested { break }
                    }
                    let message = buffer[head]
                    head += 1
                    lanes.started(lane)
                    metrics.inFlight.record(lanes.running)
                    let executor = lanes.lanes[lane].executor, gate = lanes.lanes[lane].gate, exchange = lanes.lanes[lane].exchange
                    requests.addTask(executorPreference: executor) {
                        try await self.handle(message, via: exchange, on: executor.eventLoop, gate: gate, session: session)
                        return lane
                    }
                }
                // Take one finished message.
                if lanes.running > 0, let lane = try await requests.next() {
                    lanes.finished(lane)
                    metrics.inFlight.record(lanes.running)
                }
            }
            // Stopping: let requests in flight finish and be settled; give back the rest.
            while let lane = try await requests.next() { lanes.finished(lane) }
            if !configuration.validateOnly && buffer.count > head {
                for message in buffer[head...] { session.settlements.add(.release(id: message.id)) }
                session.summary.value.withLock { $0.released += buffer.count - head }
                metrics.released.increment(by: buffer.count - head)
                logger.notice("released leases", metadata: ["count": "\(buffer.count - head)"])
            }
            return session.fatal.value
        }
    }

    /// One message: waits for a request slot, sends (unless stopping, or its lease was lost), and
    /// returns once its outcome is written.
    private func handle(
        _ message: LeasedMessage, via exchange: FCMExchange, on eventLoop: any EventLoop, gate: AsyncSemaphore, session: SendSession<Database.Consumer>
    ) async throws {
        let validateOnly = configuration.validateOnly
        // A task cancelled while it waits holds no permit and releases its message.
        let entered = (try? await gate.wait()) != nil
        if !entered || session.stop.isRequested || session.fatal.value != nil || Task.isCancelled {
            if entered { gate.signal() }
            guard !validateOnly else { return }
            session.summary.value.withLock { $0.released += 1 }
            metrics.released.increment()
            try await session.settlements.submit(.release(id: message.id))
            return
        }
        if !validateOnly && session.book.forgetIfLost(message.id) {
            gate.signal()
            return
        }
        let verdict = await deliver(message, via: exchange, on: eventLoop, quotaHold: session.quotaHold)
        gate.signal()
        if case .stop(let code, let errorCode, let detail) = verdict {
            session.fatal.set(Self.stopError(code, errorCode: errorCode, detail: detail, projectID: projectID, principal: tokens.principal))
            if !validateOnly { try await session.settlements.submit(.release(id: message.id)) }
            return
        }
        if let settlement = record(verdict, for: message, summary: session.summary) { try await session.settlements.submit(settlement) }
    }

    /// Counts a verdict; returns the outbox change it makes (none in a dry run).
    private func record(_ verdict: FCMVerdict, for message: LeasedMessage, summary: SummaryBox) -> Settlement? {
        let validateOnly = configuration.validateOnly
        switch verdict {
        case .sent(let name):
            if validateOnly {
                summary.value.withLock { $0.validated += 1 }
                metrics.validated.increment()
                return nil
            }
            summary.value.withLock { $0.sent += 1 }
            metrics.sent.increment()
            return .sent(id: message.id, name: name)
        case .retry(let after, let code, let detail):
            let finalAttempt = message.attempts >= configuration.maxAttempts
            summary.value.withLock { summary in
                if finalAttempt && !validateOnly { summary.dead[code, default: 0] += 1 } else { summary.retried[code, default: 0] += 1 }
            }
            if finalAttempt && !validateOnly { metrics.dead(code) } else { metrics.retried(code) }
            logger.debug("retry", metadata: ["digest.message_id": "\(message.id)", "digest.error": "\(code)", "digest.after": "\(after)"])
            if validateOnly { return nil }
            let at = configuration.clock() + Int64(after.seconds.rounded(.up))
            return .retry(id: message.id, at: at, error: "\(code): \(detail)")
        case .dead(let code, let detail, let unregistered):
            summary.value.withLock { summary in
                summary.dead[code, default: 0] += 1
                if unregistered && !validateOnly { summary.devicesRemoved += 1 }
            }
            metrics.dead(code)
            logger.info("dead", metadata: ["digest.message_id": "\(message.id)", "digest.error": "\(code)", "digest.user_id": "\(message.userID)"])
            if validateOnly { return nil }
            let reason = "\(code): \(detail)"
            return unregistered ? .unregistered(id: message.id, reason: reason) : .dead(id: message.id, reason: reason)
        case .reauthenticate, .stop:
            return nil  // handled by the caller
        }
    }

    /// One try of one message; never throws (failures are verdicts).
    ///
    /// A request the server refused unprocessed (a stream past the last one its GOAWAY names, or reset
    /// with REFUSED_STREAM) is posted again at once and is no try: FCM did nothing with it. Any other
    /// failure without an answer may have been delivered, and is retried later as a try.
    private func deliver(_ message: LeasedMessage, via exchange: FCMExchange, on eventLoop: any EventLoop, quotaHold: QuotaHold) async -> FCMVerdict {
        var random = SystemRandomNumberGenerator()
        let started = ContinuousClock.now
        defer { metrics.latency.recordNanoseconds(Int64((ContinuousClock.now - started).seconds * 1e9)) }
        var reauthenticated = false
        var refusals = 0
        while true {
            let token: String
            do {
                if let cached = tokens.currentToken() { token = cached } else { token = try await tokens.token() }
            } catch {
                let failure = error as? SenderError
                // A source still unavailable when the token expired: exit 75, a later start may work.
                return .stop(failure?.code == .unavailable ? .unavailable : .authentication, code: "AUTH", detail: failure?.message ?? "\(error)")
            }
            let body = ByteBuffer(string: configuration.validateOnly ? Self.dryRun(message.message) : message.message)
            let verdict: FCMVerdict
            do {
                let answer = try await exchange.post(body, token: token, on: eventLoop, timeout: configuration.requestTimeout)
                // The sender's clock reads whole seconds, as HTTP dates do: a Retry-After date that is
                // the longest wait comes back as the retry time exactly (``record(_:for:summary:)``
                // adds the delay to the same clock), and a quota hold lasts at most a second longer.
                let now = Date(timeIntervalSince1970: TimeInterval(configuration.clock()))
                if answer.status == 429, let after = answer.retryAfter.flatMap({ FCMResponse.parseRetryAfter($0, now: now) }) {
                    if quotaHold.extend(by: configuration.retry.scaled(after)) { metrics.quotaHolds.increment() }
                }
                verdict = FCMResponse.verdict(
                    status: answer.status, retryAfter: answer.retryAfter, body: Array(buffer: answer.body),
                    attempt: message.attempts, policy: configuration.retry, now: now, random: &random)
            } catch where FCMExchange.wasRefused(error) && refusals < Self.maxRefusals {
                refusals += 1
                metrics.refused.increment()
                continue
            } catch {
                return FCMResponse.verdict(networkError: error, attempt: message.attempts, policy: configuration.retry, random: &random)
            }
            guard case .reauthenticate(let detail) = verdict else { return verdict }
            if reauthenticated { return .stop(.authentication, code: "UNAUTHENTICATED", detail: detail) }
            await tokens.invalidate(token)
            reauthenticated = true
        }
    }

    /// Refused requests posted again in a row before the refusal counts as a failed try.
    static var maxRefusals: Int { 8 }

    /// `{"message":…}` → `{"validate_only":true,"message":…}`.
    static func dryRun(_ body: String) -> String {
        guard body.hasPrefix("{") else { return body }
        return "{\"validate_only\":true," + body.dropFirst()
    }


    static func stopError(_ code: SenderError.Code, errorCode: String, detail: String, projectID: String, principal: String) -> SenderError {
        if code == .unavailable {
            return SenderError(code, "no access token (\(detail)); leases released, nothing more sent")
        }
        let advice: String
        switch code {
        case .thirdPartyAuth:
            advice = "the APNs authentication key or certificate, or the web push credentials, in the Firebase project \(projectID) are missing or invalid"
        case .configuration:
            advice = "check --endpoint and the project id \(projectID)"
        default:
            advice = "\(principal) may not send messages for the project \(projectID): check its key or access scopes and its Firebase Cloud Messaging permission"
        }
        // AUTH: the credentials source refused a refresh mid-run, not FCM.
        let cause = errorCode == "AUTH" ? "no access token (\(detail))" : "FCM answered \(errorCode) (\(detail))"
        return SenderError(code, "\(cause): \(advice); leases released, nothing more sent")
    }
}

/// A stop request, noticed by sleepers within 20 ms.
final class StopFlag: Sendable {
    private let requested = Atomic<Bool>(false)

    var isRequested: Bool { requested.load(ordering: .acquiring) }

    func request() { requested.store(true, ordering: .releasing) }

    /// Sleeps for `duration`, or less if a stop is requested meanwhile.
    func sleep(for duration: Duration) async throws {
        let deadline = ContinuousClock.now + duration
        while !isRequested {
            let left = deadline - .now
            if left <= .zero { return }
            try await Task.sleep(for: min(left, .milliseconds(20)))
        }
    }
}

/// Until when FCM asked the sender to send nothing (the latest `Retry-After` of a 429): every
/// connection waits, not only the one that was told.
final class QuotaHold: Sendable {
    private let deadline = Mutex<ContinuousClock.Instant?>(nil)

    var until: ContinuousClock.Instant? { deadline.withLock { $0 } }

    /// Holds until `delay` from now, unless already held longer; true when that moved the deadline.
    func extend(by delay: Duration) -> Bool {
        let until = ContinuousClock.now + delay
        return deadline.withLock { deadline in
            if let current = deadline, current >= until { return false }
            deadline = until
            return true
        }
    }
}

/// The first error that stops the sender.
final class FatalBox: Sendable {
    private let error = Mutex<SenderError?>(nil)

    var value: SenderError? { error.withLock { $0 } }

    func set(_ value: SenderError) { error.withLock { if $0 == nil { $0 = value } } }
}

/// The running counts, shared by the dispatcher's callbacks.
final class SummaryBox: Sendable {
    let value = Mutex(SendSummary())
}

/// What one call of ``FCMSender/send()`` shares between its dispatcher, its writer, its lease keeper
/// and each message's task: the outbox consumer, the outcomes waiting to be written, the leases held,
/// the running counts, the stop request and the first error that stops the sender.
struct SendSession<Consumer: OutboxConsumer>: Sendable {
    let consumer: Consumer
    let settlements = SettlementQueue()
    let book = LeaseBook()
    let summary = SummaryBox()
    let stop: StopFlag
    let fatal = FatalBox()
    let quotaHold = QuotaHold()
    /// One store operation and the book's update that mirrors it at a time.
    private let storeOrder = AsyncSemaphore(permits: 1)

    /// Runs a store operation that changes leases together with the ``LeaseBook`` update that mirrors
    /// it, with no other such pair in between: the book follows the store's order (a message the
    /// writer releases and the dispatcher leases again is booked as settled, then as leased).
    func inStoreOrder<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        // Not cancellable: the outcomes of requests already made are written even while stopping.
        await storeOrder.waitIgnoringCancellation()
        defer { storeOrder.signal() }
        return try await body()
    }
}
