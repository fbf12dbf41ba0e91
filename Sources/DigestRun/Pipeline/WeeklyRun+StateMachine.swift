/// The weekly run's scheduling, without I/O: events in, actions out.
///
/// ``WeeklyRun`` reads users in batches through the store's reader, composes their digests on the
/// concurrency pool and commits each batch through the store's ledger. This type decides what to
/// start next; an executor (a task group) carries out the actions and reports how each one ended. It
/// has no clock, does no I/O and never suspends, so every order in which the work can finish can be
/// tested.
///
/// The invariants, true after every event:
/// - At most one read is in flight. A read starts only when none is, the users are not exhausted, no
///   maintenance is due, and fewer than `2 × concurrency` batches are composing or waiting to be
///   written (back-pressure); so composing + pending never exceeds `2 × concurrency`.
/// - Each batch read gets the next sequence number (0, 1, 2, …) and is composed at once, many at a
///   time. Results are written strictly in sequence order, one write at a time, each exactly once.
/// - After `batchesPerMaintenance` committed writes, maintenance is due: no read starts. It runs on the
///   writer, in place of the next write, once no read is in flight (until then writes go on). When it
///   is done the count starts again and reads resume.
/// - `.finish` comes once, alone and last: when the users are exhausted and nothing is composing,
///   pending, being written or maintained. `.fail` comes at most once, instead of `.finish`.
/// - After `.finish` or `.fail` the machine is over: every event returns `[]`.
///
/// An event that cannot happen in the current state (a `written` with no write in flight or for
/// another sequence, a `composed` for a sequence that is not composing, a second `start()`, an event
/// before `start()`) is a bug in the executor. The machine answers it with
/// `.fail(UnexpectedRunEvent)` rather than trapping: the run stops with a message, and a rerun resumes
/// after the cursor, instead of the process (maybe a server) going down.
///
/// The executor is `WeeklyRun.run`'s task group: for each action it starts a child task (a read on
/// the store's reader, a composition, a commit or maintenance on the store's ledger) whose result
/// comes back as one event, and it throws at `.fail`:
///
/// ```swift
/// var machine = WeeklyRunStateMachine<ReadBatch, BatchResult>(cursor: 0, concurrency: 2, batchesPerMaintenance: 8)
/// try perform(machine.start())                      // [.read(after: 0)]
/// while !finished, let event = try await group.next() {
///     switch event {
///     case .read(let batch?): try perform(machine.readCompleted(batch, lastKey: batch.lastKey))
///     case .read(nil): try perform(machine.readExhausted())
///     case .composed(let sequence, let result): try perform(machine.composed(sequence: sequence, result))
///     case .written(let sequence, _, _): try perform(machine.written(sequence: sequence))
///     case .maintained: try perform(machine.maintained())
///     case .failed(let error): try perform(machine.failed(error))
///     }
/// }
/// ```
struct WeeklyRunStateMachine<Batch: Sendable, Composed: Sendable>: Sendable {
    /// What the executor starts next; each but `.finish` and `.fail` is answered by one event.
    enum Action: Sendable {
        /// Read the batch of users after key `after` (on the reader); answer `readCompleted` or
        /// `readExhausted`.
        case read(after: Int64)
        /// Compose the batch (on the concurrency pool); answer `composed(sequence:_:)`.
        case compose(sequence: Int, Batch)
        /// Commit the result and the cursor (on the writer); answer `written(sequence:)`.
        case write(sequence: Int, Composed)
        /// Store housekeeping (on the writer, while no read is going); answer `maintained()`.
        case maintain
        /// Everything read is written: the run is done.
        case finish
        /// Stop: cancel and await what is still in flight, then throw the error.
        case fail(any Error)
    }

    private enum Phase { case notStarted, running, over }
    private enum Reader { case idle, reading, exhausted }
    private enum Writer: Equatable { case idle, writing(sequence: Int), maintaining }

    /// Batches composed at once; composing + pending stay within twice this.
    let concurrency: Int
    /// Committed writes between two maintenances.
    let batchesPerMaintenance: Int

    private var phase = Phase.notStarted
    /// Where the next read starts: the last key of the last batch read.
    private var cursor: Int64
    private var reader = Reader.idle
    private var writer = Writer.idle
    /// The sequence number of the next batch read.
    private var nextToRead = 0
    /// The sequence number of the next batch to write.
    private var nextToWrite = 0
    private var composing: Set<Int> = []
    /// Composed results waiting for their turn on the writer.
    private var pending: [Int: Composed] = [:]
    private var writesSinceMaintenance = 0
    private var maintenanceDue = false

    /// A machine whose first read starts after `cursor`. Both counts must be at least 1.
    init(cursor: Int64, concurrency: Int, batchesPerMaintenance: Int) {
        precondition(concurrency >= 1, "concurrency must be at least 1, not \(concurrency)")
        precondition(batchesPerMaintenance >= 1, "batchesPerMaintenance must be at least 1, not \(batchesPerMaintenance)")
        self.cursor = cursor
        self.concurrency = concurrency
        self.batchesPerMaintenance = batchesPerMaintenance
    }

    /// Starts the run: the first read.
    mutating func start() -> [Action] {
        switch phase {
        case .notStarted:
            phase = .running
            return advance()
        case .running: return unexpected("start()", "twice")
        case .over: return []
        }
    }

    /// The read in flight found a batch whose last key is `lastKey`: it is composed under the next
    /// sequence number, and the next read starts after `lastKey`.
    mutating func readCompleted(_ batch: Batch, lastKey: Int64) -> [Action] {
        if let refusal = refusal("readCompleted") { return refusal }
        guard reader == .reading else { return unexpected("readCompleted", "with no read in flight") }
        reader = .idle
        cursor = lastKey
        let sequence = nextToRead
        nextToRead += 1
        composing.insert(sequence)
        return [.compose(sequence: sequence, batch)] + advance()
    }

    /// The read in flight found no users left: no read starts again.
    mutating func readExhausted() -> [Action] {
        if let refusal = refusal("readExhausted") { return refusal }
        guard reader == .reading else { return unexpected("readExhausted", "with no read in flight") }
        reader = .exhausted
        return advance()
    }

    /// Batch `sequence` is composed; `result` waits for its turn on the writer.
    mutating func composed(sequence: Int, _ result: Composed) -> [Action] {
        if let refusal = refusal("composed(sequence: \(sequence))") { return refusal }
        guard composing.remove(sequence) != nil else {
            return unexpected("composed(sequence: \(sequence))", "for a batch that is not composing")
        }
        pending[sequence] = result
        return advance()
    }

    /// Batch `sequence`, the one being written, is committed.
    mutating func written(sequence: Int) -> [Action] {
        if let refusal = refusal("written(sequence: \(sequence))") { return refusal }
        guard writer == .writing(sequence: sequence) else {
            return unexpected("written(sequence: \(sequence))", "while the writer is \(writer)")
        }
        writer = .idle
        nextToWrite += 1
        writesSinceMaintenance += 1
        if writesSinceMaintenance >= batchesPerMaintenance { maintenanceDue = true }
        return advance()
    }

    /// The maintenance in flight is done: the count of writes starts again.
    mutating func maintained() -> [Action] {
        if let refusal = refusal("maintained()") { return refusal }
        guard writer == .maintaining else { return unexpected("maintained()", "while the writer is \(writer)") }
        writer = .idle
        maintenanceDue = false
        writesSinceMaintenance = 0
        return advance()
    }

    /// A read, composition, write or maintenance failed: `.fail(error)`, unless the run is already over.
    mutating func failed(_ error: any Error) -> [Action] {
        guard phase != .over else { return [] }
        phase = .over
        return [.fail(error)]
    }

    /// The run's task was cancelled: `.fail(CancellationError())`, unless the run is already over.
    mutating func cancelled() -> [Action] {
        failed(CancellationError())
    }

    /// `nil` when an event may apply; otherwise the answer: `[]` once over, a `.fail` before `start()`.
    private mutating func refusal(_ event: String) -> [Action]? {
        switch phase {
        case .running: nil
        case .over: []
        case .notStarted: unexpected(event, "before start()")
        }
    }

    private mutating func unexpected(_ event: String, _ why: String) -> [Action] {
        phase = .over
        return [.fail(UnexpectedRunEvent(description: "weekly run scheduler: \(event) \(why)"))]
    }

    /// What can start now: the writer's next job, a read, or the end.
    private mutating func advance() -> [Action] {
        var actions: [Action] = []
        if let job = startWriter() { actions.append(job) }
        if let read = startRead() { actions.append(read) }
        if reader == .exhausted, composing.isEmpty, pending.isEmpty, writer == .idle {
            phase = .over
            actions.append(.finish)
        }
        return actions
    }

    /// Maintenance when due and no read is going (the store asks for that); otherwise the next write.
    private mutating func startWriter() -> Action? {
        guard writer == .idle else { return nil }
        if maintenanceDue && reader != .reading {
            writer = .maintaining
            return .maintain
        }
        guard let result = pending.removeValue(forKey: nextToWrite) else { return nil }
        writer = .writing(sequence: nextToWrite)
        return .write(sequence: nextToWrite, result)
    }

    private mutating func startRead() -> Action? {
        guard reader == .idle, !maintenanceDue, composing.count + pending.count < concurrency * 2 else { return nil }
        reader = .reading
        return .read(after: cursor)
    }
}

/// An event the weekly run's state machine cannot take in its state: a bug in the executor.
struct UnexpectedRunEvent: Error, CustomStringConvertible {
    let description: String
}
