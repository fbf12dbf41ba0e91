import CoreMetrics
import DigestCore
import DigestNIO
import DigestStore
import Logging
import ServiceLifecycle

/// Carries out ``SenderStateMachine``'s actions against an outbox consumer and a ``PushTransport``:
/// each action is a child task of one task group whose result is the event the machine takes next,
/// so the group's loop is the only place the machine changes.
///
/// A child waits for graceful shutdown (SIGTERM in a `ServiceGroup`) or the cancellation of the
/// sending task and reports it as a stop: no flag is polled. A stop lets the requests in flight
/// finish and be settled (a cancelled task's requests end at once, their outcomes recorded as tries).
struct SenderDriver<Consumer: OutboxConsumer, Transport: PushTransport>: Sendable {
    typealias Machine = SenderStateMachine<ContinuousClock.Instant>

    /// How a child ended.
    enum Event: Sendable {
        case leased([LeasedMessage])
        case answered(Int64, PushOutcome)
        case settled(applied: Int)
        case extended(kept: Set<Int64>)
        case backlog(OutboxBacklog)
        case timer
        case stop
        case storeFailed(any Error)
    }

    let consumer: Consumer
    let transport: Transport
    let owner: String
    let leaseSeconds: Int64
    let maxAttempts: Int
    /// The sender's clock in Unix seconds.
    let clock: @Sendable () -> Int64
    /// Where the loop and the store's children run (an event loop of the client).
    let control: EventLoopExecutor
    let metrics: SenderMetrics
    let logger: Logger

    /// Runs `machine` until it finishes; throws what stopped it.
    func run(_ machine: Machine) async throws -> SendSummary {
        var machine = machine
        return try await withThrowingTaskGroup(of: Event.self) { group in
            group.addTask(executorPreference: control) {
                // Graceful shutdown, or the cancellation of the sending task (then it throws).
                try? await gracefulShutdown()
                return .stop
            }
            var actions = machine.start(at: .now)
            while true {
                for action in actions {
                    switch action {
                    case .finish(let summary):
                        group.cancelAll()
                        return summary
                    case .fail(let error):
                        group.cancelAll()
                        throw error
                    default:
                        perform(action, in: &group)
                    }
                }
                metrics.inFlight.record(machine.inFlight)
                guard let event = try await group.next() else { throw UnexpectedSenderEvent(description: "sender driver: no child left") }
                actions = handle(event, &machine)
            }
        }
    }

    private func handle(_ event: Event, _ machine: inout Machine) -> [Machine.Action] {
        let now = ContinuousClock.now
        switch event {
        case .leased(let messages): return machine.leased(messages, at: now)
        case .answered(let id, let outcome): return machine.answered(id, outcome, at: now, unixTime: clock())
        case .settled(let applied): return machine.settled(applied: applied, at: now)
        case .extended(let kept): return machine.extended(kept: kept, at: now)
        case .backlog(let backlog): return machine.backlog(backlog, at: now)
        case .timer: return machine.timerFired(at: now)
        case .stop: return machine.stopRequested(at: now)
        case .storeFailed(let error): return machine.storeFailed(error)
        }
    }

    private func perform(_ action: Machine.Action, in group: inout ThrowingTaskGroup<Event, any Error>) {
        let (consumer, owner, clock, providers) = (consumer, owner, clock, Set([transport.provider]))
        switch action {
        case .send(let message, let lane):
            let transport = transport
            group.addTask(executorPreference: transport.executor(ofLane: lane)) {
                .answered(message.id, await transport.deliver(message, lane: lane))
            }
        case .settle(let settlements):
            let maxAttempts = maxAttempts
            storeTask(in: &group) { .settled(applied: try await consumer.settle(settlements, owner: owner, now: clock(), maxAttempts: maxAttempts)) }
        case .lease(let limit):
            let (leaseSeconds, maxAttempts) = (leaseSeconds, maxAttempts)
            storeTask(in: &group) {
                .leased(try await consumer.lease(owner: owner, limit: limit, now: clock(), leaseSeconds: leaseSeconds, maxAttempts: maxAttempts, providers: providers))
            }
        case .peek(let afterID, let limit):
            storeTask(in: &group) { .leased(try await consumer.peekDue(afterID: afterID, limit: limit, now: clock(), providers: providers)) }
        case .extend(let ids):
            let leaseSeconds = leaseSeconds
            storeTask(in: &group) { .extended(kept: try await consumer.extendLeases(ids: ids, owner: owner, until: clock() + leaseSeconds)) }
        case .checkBacklog:
            storeTask(in: &group) { .backlog(try await consumer.backlog(now: clock(), providers: providers)) }
        case .wake(let at):
            group.addTask(executorPreference: control) {
                // Cancelled (the run is ending), it comes early: the machine takes it as any timer.
                try? await Task.sleep(until: at, clock: .continuous)
                return .timer
            }
        case .report(let report):
            note(report)
        case .finish, .fail:
            break  // the loop ends the run
        }
    }

    private func storeTask(in group: inout ThrowingTaskGroup<Event, any Error>, _ body: @escaping @Sendable () async throws -> Event) {
        group.addTask(executorPreference: control) {
            do { return try await body() } catch { return .storeFailed(error) }
        }
    }

    /// Counts and logs what the machine reports.
    private func note(_ report: Machine.Report) {
        switch report {
        case .sent: metrics.sent.increment()
        case .validated: metrics.validated.increment()
        case .retried(let code, let id, let after):
            metrics.retried(code)
            logger.debug("retry", metadata: ["digest.message_id": "\(id)", "digest.error": "\(code)", "digest.after": "\(after)"])
        case .dead(let code, let id, let userID):
            metrics.dead(code)
            logger.info("dead", metadata: ["digest.message_id": "\(id)", "digest.error": "\(code)", "digest.user_id": "\(userID)"])
        case .released(let count):
            metrics.released.increment(by: count)
            logger.notice("released leases", metadata: ["count": "\(count)"])
        case .postponed(let code, let id):
            metrics.postponed(code)
            logger.debug("postponed", metadata: ["digest.message_id": "\(id)", "digest.error": "\(code)"])
        case .held: metrics.quotaHolds.increment()
        case .paced(let waited): metrics.pacedMicroseconds.increment(by: Int64(waited.seconds * 1e6))
        case .leased(let count): logger.debug("leased", metadata: ["count": "\(count)"])
        case .leasesLost(let lost, let held):
            logger.warning("leases lapsed before they were extended: messages not sent yet are left to whoever holds them now",
                           metadata: ["lost": "\(lost)", "held": "\(held)"])
        case .outcomesNotApplied(let count):
            // Another sender reclaimed them after our lease ran out; its outcome stands.
            logger.warning("outcomes of lost leases not recorded", metadata: ["count": "\(count)"])
        }
    }
}
