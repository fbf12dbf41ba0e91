import DigestCore
import DigestDemo
@testable import DigestRun

extension WeeklyRunStateMachineTests {
    /// Broken invariants; a class, so checking reads the simulation without needing exclusive access.
    final class IssueLog {
        var issues: [String] = []
    }

    /// An executor without I/O: whatever is in flight finishes in a random order, and the run may be
    /// failed or cancelled at a random step. It keeps its own books and records in `issues` every
    /// action that breaks an invariant, and every moment something could start but did not.
    struct Simulation {
        enum Job: Equatable { case read, compose(Int), write(Int), maintain }

        var random: SplitMix64
        let concurrency: Int, perMaintenance: Int, batches: Int
        /// The step at which the run is failed or cancelled, if any.
        let failAt: Int?
        var machine: Machine
        let log = IssueLog()
        var inFlight: [Job] = []
        var cursor: Int64
        var read = 0, exhausted = false
        var composing: Set<Int> = [], pending: Set<Int> = []
        var written: [Int] = [], writesSinceMaintenance = 0
        var finishes = 0, failures = 0, failing = false

        init(seed: UInt64) {
            random = SplitMix64(seed: seed)
            concurrency = random.next(in: 1...4)
            perMaintenance = random.next(in: 1...5)
            batches = random.next(in: 0...40)
            failAt = random.next(below: 2) == 0 ? nil : random.next(in: 0...120)
            cursor = Int64(random.next(in: 0...1000))
            machine = Machine(cursor: cursor, concurrency: concurrency, batchesPerMaintenance: perMaintenance)
        }

        var issues: [String] { log.issues }
        var over: Bool { finishes + failures > 0 }
        var maintenanceDue: Bool { writesSinceMaintenance >= perMaintenance }
        var writerBusy: Bool { inFlight.contains { if case .write = $0 { true } else { $0 == .maintain } } }

        func check(_ ok: Bool, _ issue: @autoclosure () -> String) {
            if !ok { log.issues.append(issue()) }
        }

        mutating func run() {
            take(machine.start())
            var step = 0
            while !inFlight.isEmpty && issues.isEmpty {
                if step == failAt && !over {
                    failing = true
                    take(random.next(below: 2) == 0 ? machine.cancelled() : machine.failed(Boom(description: "step \(step)")))
                    failing = false
                    check(failures == 1, "no .fail for a failure")
                }
                step += 1
                switch inFlight.remove(at: random.next(below: inFlight.count)) {
                case .read where read < batches:
                    read += 1
                    cursor += Int64(random.next(in: 1...50))
                    take(machine.readCompleted(cursor, lastKey: cursor))
                case .read:
                    exhausted = true
                    take(machine.readExhausted())
                case .compose(let sequence):
                    composing.remove(sequence)
                    pending.insert(sequence)
                    take(machine.composed(sequence: sequence, "r\(sequence)"))
                case .write(let sequence):
                    written.append(sequence)
                    writesSinceMaintenance += 1
                    take(machine.written(sequence: sequence))
                case .maintain:
                    writesSinceMaintenance = 0
                    take(machine.maintained())
                }
            }
            check(over, "stalled: nothing in flight, no .finish")
            if failures == 0 { check(finishes == 1 && written == Array(0..<batches), "wrote \(written) of \(batches)") }
            take(machine.cancelled())
        }

        /// Carries out the machine's actions, checking each against the books.
        mutating func take(_ actions: [Machine.Action]) {
            if over { check(actions.isEmpty, "actions after the end: \(actions.map(Step.init))") }
            for action in actions {
                switch action {
                case .read(let after):
                    check(!inFlight.contains(.read) && !exhausted, "a second read")
                    check(!maintenanceDue, "a read while maintenance is due")
                    check(composing.count + pending.count < 2 * concurrency, "a read past the back-pressure")
                    check(after == cursor, "read after \(after), not after the cursor \(cursor)")
                    inFlight.append(.read)
                case .compose(let sequence, let batch):
                    check(sequence == read - 1 && batch == cursor, "compose(\(sequence), \(batch)) after \(read) reads")
                    composing.insert(sequence)
                    inFlight.append(.compose(sequence))
                case .write(let sequence, let result):
                    check(!writerBusy, "a write while the writer is busy")
                    check(sequence == written.count && result == "r\(sequence)", "write(\(sequence), \(result)) after \(written.count) writes")
                    check(!maintenanceDue || inFlight.contains(.read), "a write when maintenance could run")
                    check(pending.remove(sequence) != nil, "write(\(sequence)) before it was composed")
                    inFlight.append(.write(sequence))
                case .maintain:
                    check(!writerBusy && !inFlight.contains(.read) && maintenanceDue, "maintenance out of turn")
                    inFlight.append(.maintain)
                case .finish:
                    check(actions.count == 1 && inFlight.isEmpty && exhausted, "finish with \(inFlight) in flight")
                    finishes += 1
                case .fail(let error):
                    check(actions.count == 1 && failing, "fail(\(error)) unasked, or with other actions")
                    failures += 1
                }
            }
            check(finishes + failures <= 1, "\(finishes) finishes, \(failures) failures")
            check(composing.count + pending.count <= 2 * concurrency, "\(composing.count) composing, \(pending.count) pending")
            guard !over else { return }
            // Whatever could start has started.
            let reading = inFlight.contains(.read)
            if !writerBusy {
                check(!maintenanceDue || reading, "maintenance could run")
                check(maintenanceDue && !reading || !pending.contains(written.count), "write \(written.count) could start")
            }
            check(reading || exhausted || maintenanceDue || composing.count + pending.count >= 2 * concurrency, "a read could start")
        }
    }

    /// The executor loop of `WeeklyRunStateMachine`'s doc comment, in a task group, over batches keyed
    /// 1…`batches`; the write of `failingWrite` throws.
    static func executor(batches: Int64, failingWrite: Int?) async throws -> (writes: [Int], maintenances: Int) {
        enum Event: Sendable { case read(Int64?), composed(Int, String), written(Int), maintained }
        var machine = Machine(cursor: 0, concurrency: 2, batchesPerMaintenance: 3)
        var writes: [Int] = [], maintenances = 0
        try await withThrowingTaskGroup(of: Event.self) { group in
            var actions = machine.start()
            while true {
                for action in actions {
                    switch action {
                    case .read(let after):
                        group.addTask { await Task.yield(); return .read(after < batches ? after + 1 : nil) }
                    case .compose(let sequence, _):
                        group.addTask { await Task.yield(); return .composed(sequence, "r\(sequence)") }
                    case .write(let sequence, _):
                        group.addTask {
                            await Task.yield()
                            if sequence == failingWrite { throw Boom(description: "write \(sequence)") }
                            return .written(sequence)
                        }
                    case .maintain:
                        group.addTask { .maintained }
                    case .finish:
                        return
                    case .fail(let error):
                        throw error
                    }
                }
                let next: Event?
                do { next = try await group.next() } catch { actions = machine.failed(error); continue }
                if Task.isCancelled { actions = machine.cancelled(); continue }
                switch next {
                case .read(let key?): actions = machine.readCompleted(key, lastKey: key)
                case .read(nil): actions = machine.readExhausted()
                case .composed(let sequence, let result): actions = machine.composed(sequence: sequence, result)
                case .written(let sequence):
                    writes.append(sequence)
                    actions = machine.written(sequence: sequence)
                case .maintained:
                    maintenances += 1
                    actions = machine.maintained()
                case nil: preconditionFailure("the machine finishes before the group runs dry")
                }
            }
        }
        return (writes, maintenances)
    }
}
