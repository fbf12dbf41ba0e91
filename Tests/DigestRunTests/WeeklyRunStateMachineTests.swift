@testable import DigestRun
import Testing

/// The weekly run's scheduling without I/O: by hand, by a simulated executor, and in a task group.
@Suite struct WeeklyRunStateMachineTests {
    /// A batch is its last key; a composed result names its sequence number.
    typealias Machine = WeeklyRunStateMachine<Int64, String>

    /// An action as `#expect` can compare it.
    enum Step: Equatable {
        case read(after: Int64), compose(Int, Int64), write(Int, String), maintain, finish, fail(String)

        init(_ action: Machine.Action) {
            switch action {
            case .read(let after): self = .read(after: after)
            case .compose(let sequence, let batch): self = .compose(sequence, batch)
            case .write(let sequence, let result): self = .write(sequence, result)
            case .maintain: self = .maintain
            case .finish: self = .finish
            case .fail(let error): self = .fail(String(describing: error))
            }
        }
    }

    struct Boom: Error, CustomStringConvertible {
        var description: String
    }

    static let cancelled = Step.fail(String(describing: CancellationError()))

    /// Every event a finished or failed machine can get answers `[]`.
    static func expectOver(_ machine: inout Machine) {
        #expect(machine.start().isEmpty)
        #expect(machine.readCompleted(99, lastKey: 99).isEmpty)
        #expect(machine.readExhausted().isEmpty)
        #expect(machine.composed(sequence: 0, "r0").isEmpty)
        #expect(machine.written(sequence: 0).isEmpty)
        #expect(machine.maintained().isEmpty)
        #expect(machine.failed(Boom(description: "late")).isEmpty)
        #expect(machine.cancelled().isEmpty)
    }

    @Test func anEmptyRunReadsOnceAndFinishes() {
        var machine = Machine(cursor: 42, concurrency: 2, batchesPerMaintenance: 8)
        #expect(machine.start().map(Step.init) == [.read(after: 42)])
        #expect(machine.readExhausted().map(Step.init) == [.finish])
        Self.expectOver(&machine)
    }

    @Test func writesFollowTheSequenceWhenCompositionsFinishOutOfOrder() {
        var machine = Machine(cursor: 0, concurrency: 2, batchesPerMaintenance: 8)
        #expect(machine.start().map(Step.init) == [.read(after: 0)])
        #expect(machine.readCompleted(10, lastKey: 10).map(Step.init) == [.compose(0, 10), .read(after: 10)])
        #expect(machine.readCompleted(20, lastKey: 20).map(Step.init) == [.compose(1, 20), .read(after: 20)])
        #expect(machine.readCompleted(30, lastKey: 30).map(Step.init) == [.compose(2, 30), .read(after: 30)])
        #expect(machine.readExhausted().isEmpty)
        #expect(machine.composed(sequence: 2, "r2").isEmpty)
        #expect(machine.composed(sequence: 1, "r1").isEmpty)
        #expect(machine.composed(sequence: 0, "r0").map(Step.init) == [.write(0, "r0")])
        #expect(machine.written(sequence: 0).map(Step.init) == [.write(1, "r1")])
        #expect(machine.written(sequence: 1).map(Step.init) == [.write(2, "r2")])
        #expect(machine.written(sequence: 2).map(Step.init) == [.finish])
    }

    @Test func noReadStartsWhileComposingAndPendingReachTwiceTheConcurrency() {
        var machine = Machine(cursor: 0, concurrency: 1, batchesPerMaintenance: 8)
        _ = machine.start()
        #expect(machine.readCompleted(10, lastKey: 10).map(Step.init) == [.compose(0, 10), .read(after: 10)])
        // Two composing: no read.
        #expect(machine.readCompleted(20, lastKey: 20).map(Step.init) == [.compose(1, 20)])
        // One composing, one pending (it waits for batch 0): still none.
        #expect(machine.composed(sequence: 1, "r1").isEmpty)
        // Batch 0 goes to the writer: one pending, and reading resumes.
        #expect(machine.composed(sequence: 0, "r0").map(Step.init) == [.write(0, "r0"), .read(after: 20)])
        #expect(machine.readCompleted(30, lastKey: 30).map(Step.init) == [.compose(2, 30)])
        #expect(machine.written(sequence: 0).map(Step.init) == [.write(1, "r1"), .read(after: 30)])
        #expect(machine.readExhausted().isEmpty)
        #expect(machine.composed(sequence: 2, "r2").isEmpty)
        #expect(machine.written(sequence: 1).map(Step.init) == [.write(2, "r2")])
        #expect(machine.written(sequence: 2).map(Step.init) == [.finish])
    }

    @Test func maintenanceRunsOnTheWriterAfterEveryNWrites() {
        var machine = Machine(cursor: 0, concurrency: 4, batchesPerMaintenance: 2)
        var steps = machine.start().map(Step.init)
        for key: Int64 in [10, 20, 30, 40, 50] { steps += machine.readCompleted(key, lastKey: key).map(Step.init) }
        steps += machine.readExhausted().map(Step.init)
        for sequence in 0..<5 { steps += machine.composed(sequence: sequence, "r\(sequence)").map(Step.init) }
        var writer = steps.filter { if case .write = $0 { true } else { $0 == .maintain } }
        for _ in 0..<20 {
            switch writer.last {
            case .write(let sequence, _)?: writer += machine.written(sequence: sequence).map(Step.init)
            case .maintain?: writer += machine.maintained().map(Step.init)
            default: break
            }
        }
        #expect(writer == [
            .write(0, "r0"), .write(1, "r1"), .maintain, .write(2, "r2"), .write(3, "r3"), .maintain,
            .write(4, "r4"), .finish,
        ])
    }

    @Test func dueMaintenanceWaitsForTheReadInFlightAndHoldsBackReads() {
        var machine = Machine(cursor: 0, concurrency: 2, batchesPerMaintenance: 1)
        _ = machine.start()
        _ = machine.readCompleted(10, lastKey: 10)
        #expect(machine.readCompleted(20, lastKey: 20).map(Step.init) == [.compose(1, 20), .read(after: 20)])
        #expect(machine.composed(sequence: 0, "r0").map(Step.init) == [.write(0, "r0")])
        #expect(machine.composed(sequence: 1, "r1").isEmpty)
        // Maintenance is due, but a read is in flight: the writer goes on with the next batch.
        #expect(machine.written(sequence: 0).map(Step.init) == [.write(1, "r1")])
        // The read is back: no read starts while maintenance is due.
        #expect(machine.readCompleted(30, lastKey: 30).map(Step.init) == [.compose(2, 30)])
        #expect(machine.written(sequence: 1).map(Step.init) == [.maintain])
        #expect(machine.composed(sequence: 2, "r2").isEmpty)
        #expect(machine.maintained().map(Step.init) == [.write(2, "r2"), .read(after: 30)])
        #expect(machine.written(sequence: 2).isEmpty)
        // Due again at the end: maintenance, then the end.
        #expect(machine.readExhausted().map(Step.init) == [.maintain])
        #expect(machine.maintained().map(Step.init) == [.finish])
        Self.expectOver(&machine)
    }

    @Test func finishWaitsUntilEverythingIsWritten() {
        var machine = Machine(cursor: 5, concurrency: 1, batchesPerMaintenance: 8)
        _ = machine.start()
        _ = machine.readCompleted(10, lastKey: 10)
        #expect(machine.readExhausted().isEmpty)
        #expect(machine.composed(sequence: 0, "r0").map(Step.init) == [.write(0, "r0")])
        #expect(machine.written(sequence: 0).map(Step.init) == [.finish])
        Self.expectOver(&machine)
    }

    enum Stage: CaseIterable, Sendable { case read, compose, write, maintain }

    @Test(arguments: Stage.allCases)
    func aFailingStepFailsTheRunOnce(_ stage: Stage) {
        var machine = Machine(cursor: 0, concurrency: 1, batchesPerMaintenance: 1)
        var inFlight = machine.start().map(Step.init)
        if stage != .read {
            inFlight = machine.readCompleted(10, lastKey: 10).map(Step.init)
            #expect(inFlight == [.compose(0, 10), .read(after: 10)])
        }
        if stage == .write || stage == .maintain {
            #expect(machine.readExhausted().isEmpty)
            inFlight = machine.composed(sequence: 0, "r0").map(Step.init)
            #expect(inFlight == [.write(0, "r0")])
        }
        if stage == .maintain {
            inFlight = machine.written(sequence: 0).map(Step.init)
            #expect(inFlight == [.maintain])
        }
        #expect(machine.failed(Boom(description: "\(stage) failed")).map(Step.init) == [.fail("\(stage) failed")])
        Self.expectOver(&machine)
    }

    @Test func cancellationFailsTheRunOnce() {
        var machine = Machine(cursor: 0, concurrency: 2, batchesPerMaintenance: 8)
        _ = machine.start()
        _ = machine.readCompleted(10, lastKey: 10)
        #expect(machine.cancelled().map(Step.init) == [Self.cancelled])
        Self.expectOver(&machine)

        var unstarted = Machine(cursor: 0, concurrency: 2, batchesPerMaintenance: 8)
        #expect(unstarted.cancelled().map(Step.init) == [Self.cancelled])
        Self.expectOver(&unstarted)
    }

    @Test func anEventThatCannotHappenFailsTheRunWithAMessage() {
        func failure(_ events: (inout Machine) -> [Machine.Action]) -> String? {
            var machine = Machine(cursor: 0, concurrency: 1, batchesPerMaintenance: 8)
            guard case .fail(let error as UnexpectedRunEvent)? = events(&machine).last else { return nil }
            Self.expectOver(&machine)
            return error.description
        }
        #expect(failure { $0.written(sequence: 0) } == "weekly run scheduler: written(sequence: 0) before start()")
        #expect(failure { _ = $0.start(); return $0.start() } == "weekly run scheduler: start() twice")
        #expect(failure { _ = $0.start(); return $0.maintained() } == "weekly run scheduler: maintained() while the writer is idle")
        #expect(failure { _ = $0.start(); _ = $0.readCompleted(1, lastKey: 1); return $0.composed(sequence: 1, "r1") }
            == "weekly run scheduler: composed(sequence: 1) for a batch that is not composing")
        // The second read is held back, so no read is in flight.
        #expect(failure { m in
            _ = m.start(); _ = m.readCompleted(1, lastKey: 1); _ = m.readCompleted(2, lastKey: 2)
            return m.readExhausted()
        } == "weekly run scheduler: readExhausted with no read in flight")
        // Batch 0 is being written; batch 1 is not.
        #expect(failure { m in
            _ = m.start(); _ = m.readCompleted(1, lastKey: 1); _ = m.readCompleted(2, lastKey: 2)
            _ = m.composed(sequence: 1, "r1"); _ = m.composed(sequence: 0, "r0")
            return m.written(sequence: 1)
        } == "weekly run scheduler: written(sequence: 1) while the writer is writing(sequence: 0)")
    }

    /// Many runs, the work in flight finishing in a random order, some failed or cancelled midway.
    @Test func randomCompletionOrdersKeepTheInvariants() {
        for seed in UInt64(0)..<400 {
            var simulation = Simulation(seed: seed)
            simulation.run()
            #expect(simulation.issues.isEmpty, "seed \(seed): \(simulation.issues.prefix(3))")
        }
    }

    @Test func theDocumentedExecutorLoopRunsInATaskGroup() async throws {
        let (writes, maintenances) = try await Self.executor(batches: 20, failingWrite: nil)
        #expect(writes == Array(0..<20))
        #expect(maintenances >= 1)
        await #expect(throws: Boom.self) {
            _ = try await Self.executor(batches: 20, failingWrite: 7)
        }
    }
}
