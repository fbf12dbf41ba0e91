@testable import DigestSender
import DigestStore
import Testing

/// A fixed instant for the state machine: an offset from an origin, so every test reads the same times.
struct TestInstant: InstantProtocol {
    var offset: Duration

    static func at(_ offset: Duration) -> TestInstant { TestInstant(offset: offset) }

    func advanced(by duration: Duration) -> TestInstant { TestInstant(offset: offset + duration) }

    func duration(to other: TestInstant) -> Duration { other.offset - offset }

    static func < (lhs: TestInstant, rhs: TestInstant) -> Bool { lhs.offset < rhs.offset }
}

extension SenderStateMachineTests {
    typealias Machine = SenderStateMachine<TestInstant>

    static func message(_ id: Int64, attempts: Int = 1) -> LeasedMessage {
        LeasedMessage(id: id, dedupeKey: "k\(id)", userID: "u\(id)", platform: "android", message: "{}", attempts: attempts)
    }

    static func configuration(lanes: [Int], rate: Int? = nil, drain: Bool = false, validateOnly: Bool = false) -> Machine.Configuration {
        var configuration = Machine.Configuration(
            lanes: lanes, leaseBatch: 2 * lanes.reduce(0, +), refillBelow: lanes.reduce(0, +), extendEvery: .seconds(20), maxAttempts: 3)
        configuration.ratePerMinute = rate
        configuration.drain = drain
        configuration.validateOnly = validateOnly
        configuration.openPerRequest = validateOnly ? 1 : 2
        configuration.seed = 7
        return configuration
    }

    /// A machine and what it asked for, driven by hand: the test plays the store and the transport.
    struct Run {
        var machine: Machine
        var now = TestInstant.at(.zero)
        var unixTime: Int64 = 1_800_000_000
        /// Every action, in order.
        var actions: [Machine.Action] = []
        /// Sends not answered yet, in order.
        var inFlight: [(message: LeasedMessage, lane: Int)] = []
        /// The store operation asked for and not answered.
        var store: Machine.Action?
        var reported: [Machine.Report] = []
        var settled: [Settlement] = []
        var ended: Machine.Action?
        var nextID: Int64 = 1

        init(_ configuration: Machine.Configuration) {
            machine = Machine(configuration)
            take(machine.start(at: now))
        }

        /// Started, leased `concurrency` messages, all sending on one lane.
        init(concurrency: Int) {
            self.init(SenderStateMachineTests.configuration(lanes: [concurrency]))
            lease(concurrency)
        }

        mutating func take(_ new: [Machine.Action]) {
            for action in new {
                actions.append(action)
                switch action {
                case .send(let message, let lane): inFlight.append((message, lane))
                case .lease, .peek, .settle, .extend, .checkBacklog:
                    #expect(store == nil, "a second store operation: \(action) while \(String(describing: store))")
                    store = action
                    if case .settle(let batch) = action { settled += batch }
                case .report(let report): reported.append(report)
                case .finish, .fail:
                    #expect(ended == nil, "a second end")
                    ended = action
                case .wake: break
                }
            }
        }

        /// Answers the lease asked for with `count` new messages (or `messages`).
        mutating func lease(_ count: Int = 0, messages: [LeasedMessage]? = nil) {
            guard case .lease? = store else { Issue.record("no lease asked for: \(String(describing: store))"); return }
            let batch = messages ?? (0..<count).map { _ in defer { nextID += 1 }; return SenderStateMachineTests.message(nextID) }
            store = nil
            take(machine.leased(batch, at: now))
        }

        mutating func peek(_ batch: [LeasedMessage]) {
            guard case .peek? = store else { Issue.record("no read asked for"); return }
            store = nil
            take(machine.leased(batch, at: now))
        }

        /// Answers the oldest request in flight (or message `id`'s) with `outcome`.
        mutating func answer(_ outcome: PushOutcome, id: Int64? = nil) {
            guard let index = id.map({ id in inFlight.firstIndex { $0.message.id == id } }) ?? (inFlight.isEmpty ? nil : 0) else {
                Issue.record("nothing in flight to answer")
                return
            }
            let (message, _) = inFlight.remove(at: index)
            take(machine.answered(message.id, outcome, at: now, unixTime: unixTime))
        }

        /// The store wrote the settlement asked for (`applied` of it; all by default).
        mutating func settle(applied: Int? = nil) {
            guard case .settle(let batch)? = store else { Issue.record("no settlement asked for"); return }
            store = nil
            take(machine.settled(applied: applied ?? batch.count, at: now))
        }

        mutating func extend(keepingAllBut lost: Set<Int64> = []) {
            guard case .extend(let ids)? = store else { Issue.record("no extension asked for"); return }
            store = nil
            take(machine.extended(kept: Set(ids).subtracting(lost), at: now))
        }

        mutating func backlog(_ backlog: OutboxBacklog) {
            guard case .checkBacklog? = store else { Issue.record("no backlog question asked for"); return }
            store = nil
            take(machine.backlog(backlog, at: now))
        }

        /// Moves the clock on by `duration` and fires the timer.
        mutating func wait(_ duration: Duration) {
            now = now.advanced(by: duration)
            take(machine.timerFired(at: now))
        }

        mutating func stop() { take(machine.stopRequested(at: now)) }

        /// The sends asked for, in order.
        var sends: [Int64] { actions.compactMap { if case .send(let message, _) = $0 { message.id } else { nil } } }

        var wakes: [TestInstant] { actions.compactMap { if case .wake(let at) = $0 { at } else { nil } } }

        var finished: SendSummary? { if case .finish(let summary)? = ended { summary } else { nil } }

        var failure: (any Error)? { if case .fail(let error)? = ended { error } else { nil } }
    }
}
