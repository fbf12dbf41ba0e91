@testable import DigestSender
import DigestStore
import Testing

/// The sender's scheduling without I/O, on fixed instants: the test plays the store and the provider.
@Suite struct SenderStateMachineTests {
    static let failure = PushOutcome.Failure(code: "UNAVAILABLE", detail: "m")

    @Test func itLeasesThenSendsUpToEachLanesRequestsOnTheRoomiestLane() {
        var run = Run(Self.configuration(lanes: [2, 1]))
        guard case .lease(let limit)? = run.store else { Issue.record("\(run.actions)"); return }
        #expect(limit == 6 && run.wakes == [.at(.seconds(20))])  // the first lease extension
        run.lease(5)
        #expect(run.sends == [1, 2, 3] && run.inFlight.map(\.lane) == [0, 0, 1])
        guard case .lease? = run.store else { Issue.record("fewer than the requests wait: lease more"); return }
        // An answer frees a request; the answered message still holds room on its lane until written:
        // four in flight, three of them requests.
        run.answer(.sent(receipt: "n1"))
        #expect(run.sends == [1, 2, 3, 4] && run.inFlight.map(\.lane) == [0, 1, 0])
        #expect(run.machine.inFlight == 4)
    }

    @Test func aLaneHoldsAtMostTwiceItsRequestsUnsettled() {
        var run = Run(Self.configuration(lanes: [1]))
        run.lease(10)
        run.answer(.sent(receipt: "n1"))  // being written; the lane's request is free
        run.answer(.sent(receipt: "n2"))
        // No request, but two answers not yet written: the lane's room (2 × 1) is used up.
        #expect(run.sends == [1, 2] && run.inFlight.isEmpty && run.machine.inFlight == 2)
        run.settle()
        #expect(run.settled == [.sent(id: 1, name: "n1"), .sent(id: 2, name: "n2")])
        #expect(run.sends == [1, 2, 3])
    }

    @Test func nothingIsSentAfterAStopAndWhatWasNotSentIsReleased() {
        var configuration = Self.configuration(lanes: [2])
        configuration.leaseBatch = 4
        var run = Run(configuration)
        run.lease(4)
        #expect(run.sends == [1, 2])
        run.stop()
        run.answer(.sent(receipt: "n1"))
        run.answer(.messageDead(.init(code: "INVALID_ARGUMENT", detail: "bad")))
        #expect(run.sends == [1, 2] && run.ended == nil)
        run.settle()
        #expect(run.settled == [.release(id: 3), .release(id: 4), .sent(id: 1, name: "n1"), .dead(id: 2, reason: "INVALID_ARGUMENT: bad")])
        #expect(run.reported.contains(.released(2)) && run.ended == nil)
        run.settle()
        let summary = run.finished
        #expect(summary?.sent == 1 && summary?.released == 2 && summary?.dead == ["INVALID_ARGUMENT": 1])
    }

    @Test func aPostponedMessageGoesBackUntriedUntilLaterAndTheRunGoesOn() {
        var configuration = Self.configuration(lanes: [1])
        configuration.leaseBatch = 3
        var run = Run(configuration)
        run.lease(3)
        run.answer(.postponed(.init(code: "HOST_NOT_ALLOWED", detail: "push.example.net is not allowed"), for: .seconds(900)))
        run.settle()
        #expect(run.settled == [.release(id: 1, until: run.unixTime + 900, reason: "HOST_NOT_ALLOWED: push.example.net is not allowed")])
        #expect(run.reported.contains(.postponed(code: "HOST_NOT_ALLOWED", id: 1)) && run.sends == [1, 2])
        run.stop()
        run.answer(.sent(receipt: "n2"))
        run.settle()
        run.settle()
        let summary = run.finished
        #expect(summary?.postponed == ["HOST_NOT_ALLOWED": 1] && summary?.sent == 1 && summary?.released == 1 && summary?.retried.isEmpty == true)
        #expect(summary?.lines().contains("left untried for later: 1 (HOST_NOT_ALLOWED 1)") == true)
    }

    @Test func aLeaseThatReturnsDuringAStopIsReleased() {
        var run = Run(Self.configuration(lanes: [2]))
        run.stop()
        #expect(run.ended == nil)  // the lease is in flight
        run.lease(3)
        #expect(run.sends.isEmpty && run.settled == [.release(id: 1), .release(id: 2), .release(id: 3)])
        run.settle()
        #expect(run.finished?.released == 3)
    }

    @Test func retriesHonourRetryAfterAndTheBackoff() {
        var configuration = Self.configuration(lanes: [4])
        configuration.maxAttempts = 12
        var run = Run(configuration)
        run.lease(messages: [Self.message(1), Self.message(2), Self.message(3, attempts: 6), Self.message(4, attempts: 12)])
        run.answer(.retry(after: .seconds(120), Self.failure))  // beats the first backoff (≤ 1 s)
        run.answer(.retry(after: nil, Self.failure))  // the backoff alone: ½ to 1 s, rounded up
        run.answer(.retry(after: .seconds(3), Self.failure))  // the sixth try: 16 to 32 s beats 3
        run.answer(.retry(after: nil, Self.failure))  // the last try: counted dead, the store makes it so
        run.lease(0)
        let t = run.unixTime
        let times = run.settled.map { settlement -> Int64 in
            guard case .retry(_, let at, let error) = settlement, error == "UNAVAILABLE: m" else { return -1 }
            return at - t
        }
        #expect(times.count == 4 && times[0] == 120 && times[1] == 1 && (16...32).contains(times[2]), "\(times)")
        run.settle()
        run.stop()
        #expect(run.finished?.retried == ["UNAVAILABLE": 3] && run.finished?.dead == ["UNAVAILABLE": 1])
    }

    /// A 429 with Retry-After holds every send, not only the one answered: nothing starts before it ends.
    @Test func aProvidersHoldStopsEverySendUntilItEnds() {
        var run = Run(Self.configuration(lanes: [2]))
        run.lease(4)
        run.answer(.retry(after: .seconds(60), .init(code: "QUOTA_EXCEEDED", detail: "m"), pauseEverything: .seconds(5)))
        #expect(run.sends == [1, 2] && run.wakes.contains(.at(.seconds(5))))
        run.wait(.seconds(4))
        #expect(run.sends == [1, 2])
        run.wait(.seconds(1))
        #expect(run.sends == [1, 2, 3])
    }

    @Test func credentialsRefusedStopsEverythingAndSettlesWhatWasAnswered() {
        var configuration = Self.configuration(lanes: [3])
        configuration.leaseBatch = 5
        var run = Run(configuration)
        run.lease(5)
        #expect(run.sends == [1, 2, 3])
        let refusal = SenderError(.thirdPartyAuth, "refused")
        run.answer(.credentialsRefused(refusal), id: 1)
        run.answer(.sent(receipt: "n2"))
        run.answer(.deviceDead(.init(code: "UNREGISTERED", detail: "gone")))
        #expect(run.sends == [1, 2, 3] && run.ended == nil)
        run.lease(0)  // the lease asked for before the refusal
        run.settle()
        #expect(Set(run.settled) == [.release(id: 1), .release(id: 4), .release(id: 5), .sent(id: 2, name: "n2"), .unregistered(id: 3, reason: "UNREGISTERED: gone")])
        #expect(run.settled.count == 5)
        #expect((run.failure as? SenderError)?.code == .thirdPartyAuth)
    }

    @Test func aLostLeaseIsForgottenUnsentAndALeaseOfAMessageHeldIsIgnored() {
        var configuration = Self.configuration(lanes: [1])
        configuration.leaseBatch = 3
        var run = Run(configuration)
        run.lease(3)
        #expect(run.sends == [1])
        run.wait(.seconds(20))
        guard case .extend(let ids)? = run.store else { Issue.record("\(String(describing: run.store))"); return }
        #expect(Set(ids) == [1, 2, 3])
        run.extend(keepingAllBut: [2])
        #expect(run.reported.contains(.leasesLost(lost: 1, held: 3)))
        run.answer(.sent(receipt: "n1"))
        #expect(run.sends == [1, 3])  // 2: another sender may hold it now
        run.settle()
        run.lease(messages: [Self.message(3), Self.message(4)])  // 3 lapsed and came back: it is in flight
        run.answer(.sent(receipt: "n3"))
        #expect(run.sends == [1, 3, 4])
        run.settle()
        run.answer(.sent(receipt: "n4"))
        run.stop()
        run.lease(0)
        run.settle()
        #expect(run.settled == [.sent(id: 1, name: "n1"), .sent(id: 3, name: "n3"), .sent(id: 4, name: "n4")])
        #expect(run.finished?.sent == 3)
    }

    @Test func aDrainEndsWhenTheBacklogIsEmptyAndAsksAgainWhileItIsNot() {
        var run = Run(Self.configuration(lanes: [2], drain: true))
        run.lease(0)
        guard case .checkBacklog? = run.store else { Issue.record("\(String(describing: run.store))"); return }
        run.backlog(OutboxBacklog(due: 0, retrying: 1, leased: 0, waiting: 0, nextDue: nil))
        #expect(run.ended == nil && run.wakes.last == .at(.milliseconds(100)))
        run.wait(.milliseconds(100))
        guard case .checkBacklog? = run.store else { Issue.record("asked again, no lease before the poll interval"); return }
        run.backlog(OutboxBacklog(due: 0, retrying: 1, leased: 0, waiting: 0, nextDue: nil))
        run.wait(.milliseconds(900))
        guard case .lease? = run.store else { Issue.record("a lease after the poll interval"); return }
        run.lease(0)
        run.backlog(OutboxBacklog(due: 0, retrying: 0, leased: 0, waiting: 3, nextDue: 1_800_003_600))
        #expect(run.finished?.waiting == 3 && run.finished?.nextDue == 1_800_003_600)
    }

    /// A message retried once, then postponed (a host not allowed), is ready, not due and tried
    /// before: the outbox counts it among its retries, but a drain does not wait for a postponed
    /// message; a retry of its own it still waits for.
    @Test func aDrainDoesNotWaitForAMessagePostponedAfterARetry() {
        var run = Run(Self.configuration(lanes: [2], drain: true))
        run.lease(messages: [Self.message(1, attempts: 2), Self.message(2, attempts: 1)])
        let later = PushOutcome.postponed(.init(code: "HOST_NOT_ALLOWED", detail: "push.example.net"), for: .seconds(900))
        run.answer(later, id: 1)
        run.answer(later, id: 2)
        for _ in 0..<4 {
            switch run.store {
            case .lease?: run.lease(0)
            case .settle?: run.settle()
            default: break
            }
        }
        #expect(Set(run.settled.map(\.id)) == [1, 2])
        // Message 1 counts as a retry (tried before), message 2 as waiting; and one real retry.
        run.backlog(OutboxBacklog(due: 0, retrying: 2, leased: 0, waiting: 1, nextDue: nil))
        #expect(run.ended == nil)
        run.wait(.seconds(1))
        if case .lease? = run.store { run.lease(0) }
        run.backlog(OutboxBacklog(due: 0, retrying: 1, leased: 0, waiting: 1, nextDue: nil))
        #expect(run.finished?.postponed == ["HOST_NOT_ALLOWED": 2])
    }

    @Test func aDryRunReadsOnSettlesNothingAndEndsWhenAReadFindsNothing() {
        var run = Run(Self.configuration(lanes: [2], validateOnly: true))
        guard case .peek(let after, _)? = run.store, after == 0 else { Issue.record("\(String(describing: run.store))"); return }
        run.peek([Self.message(5), Self.message(9)])
        guard case .peek(let next, _)? = run.store, next == 9 else { Issue.record("\(String(describing: run.store))"); return }
        run.peek([])
        run.answer(.sent(receipt: "n5"))
        #expect(run.ended == nil)
        run.answer(.deviceDead(.init(code: "UNREGISTERED", detail: "gone")))
        #expect(run.settled.isEmpty)
        let summary = run.finished
        #expect(summary?.validated == 1 && summary?.dead == ["UNREGISTERED": 1] && summary?.devicesRemoved == 0)
    }

    @Test func impossibleEventsFailInsteadOfTrapping() {
        var machine = Machine(Self.configuration(lanes: [1]))
        guard case .fail(let early)? = machine.leased([], at: .at(.zero)).first else { Issue.record(); return }
        #expect("\(early)".contains("before start()"))
        var run = Run(Self.configuration(lanes: [1]))
        run.take(run.machine.answered(42, .sent(receipt: "n"), at: run.now, unixTime: run.unixTime))
        #expect("\(run.failure.map { "\($0)" } ?? "")".contains("not in flight"))
        #expect(run.machine.settled(applied: 0, at: run.now).isEmpty)  // over: nothing more
    }

    /// A store result with no such operation running (a lease runs, or nothing), or a second start,
    /// fails the run; after it the machine answers nothing.
    @Test(arguments: ["settled", "extended", "backlog", "leased twice", "start twice"])
    func aResultWithoutItsOperationFailsTheRun(event: String) {
        var run = Run(Self.configuration(lanes: [1]))  // a lease is in flight
        switch event {
        case "settled": run.take(run.machine.settled(applied: 0, at: run.now))
        case "extended": run.take(run.machine.extended(kept: [], at: run.now))
        case "backlog": run.take(run.machine.backlog(OutboxBacklog(due: 0, retrying: 0, leased: 0, waiting: 0, nextDue: nil), at: run.now))
        case "leased twice":
            run.lease(0)
            run.take(run.machine.leased([], at: run.now))
        default: run.take(run.machine.start(at: run.now))
        }
        #expect(run.failure is UnexpectedSenderEvent, "\(event): \(String(describing: run.failure))")
        #expect(run.machine.timerFired(at: run.now).isEmpty && run.machine.stopRequested(at: run.now).isEmpty)
    }

    @Test func aStoreFailureEndsAtOnce() {
        var run = Run(Self.configuration(lanes: [1]))
        run.lease(2)
        run.take(run.machine.storeFailed(SenderError(.store, "disk full")))
        #expect((run.failure as? SenderError)?.code == .store)
    }
}
