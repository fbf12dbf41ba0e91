public import AsyncHTTPClient
import CoreMetrics
import DigestNIO
public import DigestStore
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
/// A `Service`: on graceful shutdown (SIGTERM in a `ServiceGroup`) it sends nothing new, lets the
/// requests in flight finish and be settled, releases the leases it still holds, and returns.
///
/// ```swift
/// let sender = FCMSender(database: .sqlite(path: "digest.sqlite"), account: account, client: client,
///                        tokens: tokens, configuration: .init(), logger: logger)
/// let summary = try await sender.send()
/// ```
public struct FCMSender<Database: DigestDatabase>: Service {
    /// How the sender works.
    public struct Configuration: Sendable {
        /// FCM's base URL; the fake server's in tests.
        public var endpoint = "https://fcm.googleapis.com"
        /// Requests in flight at once.
        public var concurrency = 64
        /// At most this many requests a minute (nil: no limit).
        public var ratePerMinute: Int?
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
        /// One request's deadline.
        public var requestTimeout: TimeAmount = .seconds(30)
        public var retry = RetryPolicy()
        /// The sender's clock in Unix seconds: what is due, leases, retries, holds and expiry all
        /// follow it (tests set a fixed instant).
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
    private let exchange: FCMExchange

    public init(database: Database, projectID: String, client: HTTPClient, tokens: AccessTokenProvider,
                configuration: Configuration, logger: Logger) {
        self.database = database
        self.projectID = projectID
        self.client = client
        self.tokens = tokens
        self.configuration = configuration
        self.logger = logger
        self.exchange = FCMExchange(client: client, url: "\(configuration.endpoint)/v1/projects/\(projectID)/messages:send")
    }

    /// For the project of a service-account key.
    public init(database: Database, account: ServiceAccount, client: HTTPClient, tokens: AccessTokenProvider,
                configuration: Configuration, logger: Logger) {
        self.init(database: database, projectID: account.projectID, client: client, tokens: tokens, configuration: configuration, logger: logger)
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
        let open = configuration.validateOnly ? configuration.concurrency : 2 * configuration.concurrency
        let clock = ContinuousClock()
        let stop = session.stop
        var buffer: [LeasedMessage] = []
        var head = 0
        var lastEmptyFetch: ContinuousClock.Instant?
        var scanCursor: Int64 = 0  // dry run: the last id read
        var pacer = configuration.ratePerMinute.map { RatePacer(perMinute: $0, burst: min(configuration.concurrency, max(1, $0 / 60))) }
        // Each message's task runs on an event loop of the client, and its request is pinned to that
        // loop: the request's start, its answer and the task waiting for it share one thread.
        var lanes = RequestLanes(eventLoops: Array(client.eventLoopGroup.makeIterator()), concurrency: configuration.concurrency, open: open)

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
                                    maxAttempts: configuration.maxAttempts))
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
                    if var paced = pacer {
                        let wait = paced.reserve(now: clock.now)
                        pacer = paced
                        if wait > .zero { try await stop.sleep(for: wait) }
                        if stop.isRequested { break }
                    }
                    let message = buffer[head]
                    head += 1
                    lanes.started(lane)
                    metrics.inFlight.record(lanes.running)
                    let executor = lanes.lanes[lane].executor, gate = lanes.lanes[lane].gate
                    requests.addTask(executorPreference: executor) {
                        try await self.handle(message, on: executor.eventLoop, gate: gate, session: session)
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
        _ message: LeasedMessage, on eventLoop: any EventLoop, gate: AsyncGate, session: SendSession<Database.Consumer>
    ) async throws {
        let validateOnly = configuration.validateOnly
        await gate.enter()
        if session.stop.isRequested || session.fatal.value != nil || Task.isCancelled {
            gate.leave()
            guard !validateOnly else { return }
            session.summary.value.withLock { $0.released += 1 }
            metrics.released.increment()
            try await session.settlements.submit(.release(id: message.id))
            return
        }
        if !validateOnly && session.book.forgetIfLost(message.id) {
            gate.leave()
            return
        }
        let verdict = await deliver(message, on: eventLoop)
        gate.leave()
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
            let at = Int64((Date().timeIntervalSince1970 + after.seconds).rounded(.up))
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
    private func deliver(_ message: LeasedMessage, on eventLoop: any EventLoop) async -> FCMVerdict {
        var random = SystemRandomNumberGenerator()
        let started = ContinuousClock.now
        defer { metrics.latency.recordNanoseconds(Int64((ContinuousClock.now - started).seconds * 1e9)) }
        var reauthenticated = false
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
                verdict = FCMResponse.verdict(
                    status: answer.status, retryAfter: answer.retryAfter, body: Array(buffer: answer.body),
                    attempt: message.attempts, policy: configuration.retry, now: Date(), random: &random)
            } catch {
                return FCMResponse.verdict(networkError: error, attempt: message.attempts, policy: configuration.retry, random: &random)
            }
            guard case .reauthenticate(let detail) = verdict else { return verdict }
            if reauthenticated { return .stop(.authentication, code: "UNAUTHENTICATED", detail: detail) }
            await tokens.invalidate(token)
            reauthenticated = true
        }
    }

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
    /// One store operation and the book's update that mirrors it at a time.
    private let storeOrder = AsyncGate(limit: 1)

    /// Runs a store operation that changes leases together with the ``LeaseBook`` update that mirrors
    /// it, with no other such pair in between: the book follows the store's order (a message the
    /// writer releases and the dispatcher leases again is booked as settled, then as leased).
    func inStoreOrder<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await storeOrder.enter()
        defer { storeOrder.leave() }
        return try await body()
    }
}
