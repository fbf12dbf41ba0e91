@testable import DigestSender
import DigestStore
import Testing

/// The wrong-environment guard (APNs' `BadDeviceToken` for every token: sandbox tokens sent to
/// production, or the reverse) and dead devices with the time they died, without I/O.
@Suite struct SenderEnvironmentCheckTests {
    typealias Run = SenderStateMachineTests.Run

    static let badToken = PushOutcome.deviceDead(.init(code: "BadDeviceToken", detail: "400"), suspectEnvironment: true)
    static let wrong = SenderError(.configuration, "the tokens are for the other environment")

    static func configuration(lanes: [Int] = [4], leaseBatch: Int = 30, drain: Bool = false) -> SenderStateMachineTests.Machine.Configuration {
        var configuration = SenderStateMachineTests.configuration(lanes: lanes, drain: drain)
        configuration.leaseBatch = leaseBatch
        configuration.environmentCheck = .init(answers: 20, error: wrong)
        return configuration
    }

    static func settleAll(_ run: inout Run) {
        while case .settle? = run.store { run.settle() }
    }

    static func unregistered(_ settled: [Settlement]) -> [Int64] {
        settled.compactMap { if case .unregistered(let id, _, _) = $0 { id } else { nil } }
    }

    static func released(_ settled: [Settlement]) -> [Int64] {
        settled.compactMap { if case .release(let id, _, _) = $0 { id } else { nil } }
    }

    @Test func twentyBadDeviceTokensFirstFailTheRunWithExit78AndKillNothing() {
        var run = Run(Self.configuration())
        run.lease(30)
        for _ in 1...19 { run.answer(Self.badToken) }
        // Held answers take no lane room: the lane keeps 4 requests going and nothing is written.
        #expect(run.sends.count == 23 && run.machine.inFlight == 4 && run.store == nil && run.settled.isEmpty)
        run.answer(Self.badToken)
        #expect(run.ended == nil)  // the requests in flight finish first
        run.answer(.sent(receipt: "n21"))
        run.answer(Self.badToken)  // decided: released too
        run.answer(.retry(after: nil, .init(code: "ServiceUnavailable", detail: "503")))
        #expect(run.inFlight.isEmpty)
        Self.settleAll(&run)
        #expect(Self.unregistered(run.settled).isEmpty, "\(run.settled)")
        let expected: Set<Int64> = Set(1...20).union([22]).union(24...30)
        #expect(Set(Self.released(run.settled)) == expected)
        #expect(run.settled.contains(.sent(id: 21, name: "n21")))
        let error = run.failure as? SenderError
        #expect(error?.code == .configuration)
        #expect(error?.message == Self.wrong.message)
    }

    @Test func anyOtherAnswerFirstMakesTheHeldOnesDeadWithTheirTime() {
        var run = Run(Self.configuration())
        run.lease(30)
        for id: Int64 in 1...3 {
            run.answer(.deviceDead(.init(code: "BadDeviceToken", detail: "400"), diedAt: 1_700_000_000 + id, suspectEnvironment: true))
        }
        run.answer(.retry(after: nil, .init(code: "TooManyRequests", detail: "429")))  // says nothing of the tokens
        #expect(Self.unregistered(run.settled).isEmpty && run.reported.filter { if case .dead = $0 { true } else { false } }.isEmpty)
        run.settle()
        run.answer(.sent(receipt: "n5"))
        run.answer(Self.badToken)  // decided: a dead device at once
        run.settle()
        #expect(run.settled.contains(.unregistered(id: 1, reason: "BadDeviceToken: 400", diedAt: 1_700_000_001)))
        #expect(run.settled.contains(.unregistered(id: 3, reason: "BadDeviceToken: 400", diedAt: 1_700_000_003)))
        #expect(Self.unregistered(run.settled) == [1, 2, 3, 6])
        run.stop()
        for _ in run.inFlight { run.answer(.sent(receipt: "n")) }
        Self.settleAll(&run)
        #expect(run.finished?.dead == ["BadDeviceToken": 4] && run.finished?.devicesRemoved == 4)
    }

    @Test func anIdleRunWithFewerThanTwentyMakesThemDead() {
        var run = Run(Self.configuration(drain: true))
        run.lease(3)
        for _ in 1...3 { run.answer(Self.badToken) }
        #expect(run.settled.isEmpty)
        guard case .lease? = run.store else { Issue.record("\(String(describing: run.store))"); return }
        run.lease(0)  // nothing more: idle, nothing in flight
        #expect(Self.unregistered(run.settled) == [1, 2, 3])
        run.settle()
        guard case .checkBacklog? = run.store else { Issue.record("\(String(describing: run.store))"); return }
        run.backlog(OutboxBacklog(due: 0, retrying: 0, leased: 0, waiting: 0, nextDue: nil))
        #expect(run.finished?.devicesRemoved == 3 && run.finished?.dead == ["BadDeviceToken": 3])
    }

    @Test func aStopReleasesTheHeldOnes() {
        var run = Run(Self.configuration())
        run.lease(30)
        for _ in 1...5 { run.answer(Self.badToken) }
        run.stop()
        run.answer(Self.badToken)
        for _ in run.inFlight { run.answer(.sent(receipt: "n")) }
        Self.settleAll(&run)
        #expect(Self.unregistered(run.settled).isEmpty)
        let expected: Set<Int64> = Set(1...6)
        #expect(Set(Self.released(run.settled)).isSuperset(of: expected))
        #expect(run.finished?.sent == 3 && run.finished?.devicesRemoved == 0)
    }

    /// Without the check (FCM) a suspect answer is a dead device at once, with its time.
    @Test func withoutTheCheckADeadDeviceIsWrittenAtOnceWithItsTime() {
        var run = Run(SenderStateMachineTests.configuration(lanes: [2]))
        run.lease(2)
        run.answer(.deviceDead(.init(code: "Unregistered", detail: "410"), diedAt: 1_650_000_000, suspectEnvironment: true))
        run.answer(.deviceDead(.init(code: "UNREGISTERED", detail: "gone")))
        run.lease(0)
        Self.settleAll(&run)
        #expect(run.settled == [
            .unregistered(id: 1, reason: "Unregistered: 410", diedAt: 1_650_000_000), .unregistered(id: 2, reason: "UNREGISTERED: gone", diedAt: nil),
        ])
    }
}
