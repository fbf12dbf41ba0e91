import DigestCore
@testable import DigestSender
import DigestStore
import Testing

/// Random orders of everything that can happen to a sender, checked against its invariants.
extension SenderStateMachineTests {
    /// Leases (some returning messages already held), answers of every kind, lease extensions that lose
    /// leases, settlements, timers and a stop, in random orders: every leased message is settled
    /// exactly once unless its lease was lost (then it is sent at most once and maybe not settled),
    /// none is sent twice, no lane ever holds more than its share, nothing starts after the stop, and
    /// the run ends.
    @Test(arguments: 0..<40)
    func everyLeasedMessageIsSettledExactlyOnceWhateverTheOrder(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var configuration = Self.configuration(lanes: [3, 2, 1], drain: seed % 2 == 0)
        configuration.leaseBatch = 5
        var run = Run(configuration)
        var leased: Set<Int64> = []
        var lost: Set<Int64> = []
        /// Answered and not yet written, with the lane whose room each holds.
        var unwritten: [Int64: Int] = [:]
        var sendsAtStop: Int?
        var steps = 0
        while run.ended == nil {
            steps += 1
            guard steps < 20_000 else { Issue.record("no end after \(steps) steps (seed \(seed))"); return }
            let stopping = sendsAtStop != nil
            switch random.next() % 8 {
            case 0...2 where !run.inFlight.isEmpty:
                let index = Int(random.next() % UInt64(run.inFlight.count))
                let id = run.inFlight[index].message.id
                unwritten[id] = run.inFlight[index].lane
                let outcomes: [PushOutcome] = [
                    .sent(receipt: "n\(id)"), .retry(after: .seconds(Int64(random.next() % 5)), Self.failure),
                    .deviceDead(.init(code: "UNREGISTERED", detail: "d")), .messageDead(.init(code: "INVALID_ARGUMENT", detail: "m")),
                ]
                run.answer(outcomes[Int(random.next() % 4)], id: id)
            case 3:
                switch run.store {
                case .lease?:
                    // Up to five new messages before the stop and fewer after; sometimes one held again.
                    var batch = (0..<Int(random.next() % (stopping || run.nextID > 300 ? 2 : 6))).map { _ in
                        defer { run.nextID += 1 }
                        return Self.message(run.nextID)
                    }
                    if random.next() % 4 == 0, let again = run.inFlight.first?.message { batch.append(again) }
                    leased.formUnion(batch.map(\.id))
                    run.lease(messages: batch)
                case .settle(let batch)?:
                    for settlement in batch { unwritten[settlement.id] = nil }
                    run.settle()
                case .extend(let ids)?:
                    let gone = Set(ids.filter { _ in random.next() % 10 == 0 })
                    lost.formUnion(gone)
                    run.extend(keepingAllBut: gone)
                case .checkBacklog?:
                    let empty = random.next() % 3 == 0
                    run.backlog(OutboxBacklog(due: 0, retrying: empty ? 0 : 1, leased: 0, waiting: 0, nextDue: nil))
                default:
                    break
                }
            case 4, 5:
                run.wait(.milliseconds(Int64(random.next() % 3_000)))
            case 6 where !stopping && random.next() % 20 == 0:
                sendsAtStop = run.sends.count
                run.stop()
            default:
                if run.inFlight.isEmpty && run.store == nil {
                    run.wait(.seconds(1))
                    if sendsAtStop == nil && run.nextID > 300 {
                        sendsAtStop = run.sends.count
                        run.stop()
                    }
                }
            }
            for (lane, capacity) in [3, 2, 1].enumerated() {
                let sending = run.inFlight.filter { $0.lane == lane }.count
                let unsettled = unwritten.values.filter { $0 == lane }.count
                #expect(sending <= capacity && sending + unsettled <= 2 * capacity, "lane \(lane) (seed \(seed))")
            }
            #expect(run.machine.inFlight == run.inFlight.count + unwritten.count)
            if let sendsAtStop { #expect(run.sends.count == sendsAtStop, "a send after the stop (seed \(seed))") }
        }
        #expect(run.failure == nil, "\(String(describing: run.failure))")
        let sent = run.sends
        #expect(Set(sent).count == sent.count, "sent twice (seed \(seed))")
        let settledIDs = run.settled.map(\.id)
        #expect(Set(settledIDs).count == settledIDs.count, "settled twice (seed \(seed))")
        let unsettled = leased.subtracting(settledIDs)
        #expect(unsettled.isSubset(of: lost), "never settled, lease not lost: \(unsettled.subtracting(lost).sorted()) (seed \(seed))")
        #expect(Set(sent).subtracting(settledIDs).isSubset(of: lost))
        #expect(run.machine.inFlight == 0 && run.machine.leasesHeld == 0)
    }

    /// A sender kept busy for five simulated minutes at 120 a minute, with pauses: no minute holds more
    /// sends than the rate, and the steady rate is reached.
    @Test(arguments: [(120, 1), (120, 6), (7, 3)])
    func pacingNeverExceedsTheRateInAnyMinute(rate: Int, lanes: Int) {
        var run = Run(Self.configuration(lanes: [lanes], rate: rate))
        var random = SplitMix64(seed: UInt64(rate * lanes))
        var sendTimes: [TestInstant] = []
        while run.now < .at(.seconds(300)) {
            // The store and the provider answer at once: only the pacer makes the sender wait.
            while run.store != nil || !run.inFlight.isEmpty {
                if case .lease? = run.store { run.lease(lanes * 2) }
                if case .settle? = run.store { run.settle() }
                if case .extend? = run.store { run.extend() }
                while !run.inFlight.isEmpty { run.answer(.sent(receipt: "n")) }
            }
            while sendTimes.count < run.sends.count { sendTimes.append(run.now) }
            // To the next wake-up asked for, or a pause now and then.
            let next = run.wakes.filter { $0 > run.now }.min() ?? run.now.advanced(by: .seconds(1))
            let pause: Duration = random.next() % 200 == 0 ? .seconds(Int64(random.next() % 30)) : .zero
            run.wait(run.now.duration(to: next) + pause)
        }
        var first = 0
        for last in sendTimes.indices {
            while sendTimes[first].duration(to: sendTimes[last]) >= .seconds(60) { first += 1 }
            #expect(last - first + 1 <= rate, "sends in the minute ending at \(sendTimes[last])")
            if last - first + 1 > rate { return }
        }
        #expect(sendTimes.count >= rate * 3, "\(sendTimes.count) in five minutes")
    }
}
