import DigestCore
package import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs the real `digest` executable, as a user would.
package struct DigestBinary: Sendable {
    /// The package root (this file is `Sources/DigestTesting/DigestBinary.swift`).
    package static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `DIGEST_BIN`, or the debug build in the package's `.build`.
    package static let path: String = {
        if let explicit = ProcessInfo.processInfo.environment["DIGEST_BIN"], !explicit.isEmpty { return explicit }
        return packageRoot.appendingPathComponent(".build/debug/digest").path
    }()

    package static let templates = packageRoot.appendingPathComponent("Templates")

    /// One `Process.run()` at a time in the test process: Foundation's launch on Linux crashed in a
    /// `memcpy` inside `Process.run()` while other tests launched processes at the same moment (a full
    /// run on a loaded machine). Launching takes milliseconds; the processes still run side by side.
    private static let launching = Mutex(())

    /// Launches `process` (see ``launching``).
    package static func launch(_ process: Process) throws {
        try launching.withLock { _ in try process.run() }
    }

    /// What a finished run printed.
    package struct Output: Sendable {
        package var status: Int32
        package var stdout: String
        package var stderr: String
        /// `true` when the process ended by a signal.
        package var signalled: Bool
    }

    /// The `digest` process with the shipped templates.
    static func makeProcess(_ arguments: [String], environment changes: [String: String?] = [:]) -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DIGEST_TEMPLATES"] = templates.path
        for (name, value) in changes { environment[name] = value }
        process.environment = environment
        return process
    }

    /// Runs `digest` with `arguments` and waits for it, without holding a thread of the concurrency
    /// pool (the tests share two of them on a 2-core machine); `environment` sets (or, with `nil`,
    /// removes) variables of the test's own environment. A process still running after `timeout` is
    /// killed and the call throws ``DigestBinaryTimeout`` with the end of its stderr: a hung child
    /// fails its test instead of the whole run.
    package static func run(
        _ arguments: [String], in directory: URL? = nil, environment: [String: String?] = [:], timeout: Duration = .seconds(300)
    ) async throws -> Output {
        let process = makeProcess(arguments, environment: environment)
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try launch(process)
        // Both pipes are read to the end on threads of their own, so a full pipe never blocks the child.
        let outData = LockedData()
        let errData = LockedData()
        let group = DispatchGroup()
        for (pipe, data) in [(out, outData), (err, errData)] {
            group.enter()
            DispatchQueue.global().async {
                data.set(pipe.fileHandleForReading.readDataToEndOfFile())
                group.leave()
            }
        }
        let deadline = Deadline(process: process, after: timeout)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            group.notify(queue: .global()) { continuation.resume() }
        }
        deadline.cancel()
        await waitForExit(process)
        let stderr = String(decoding: errData.get(), as: UTF8.self)
        if deadline.killed { throw DigestBinaryTimeout(arguments: arguments, timeout: timeout, stderr: stderr) }
        return Output(
            status: process.terminationStatus, stdout: String(decoding: outData.get(), as: UTF8.self), stderr: stderr,
            signalled: process.terminationReason == .uncaughtSignal)
    }

    /// Waits for `process` to have exited (its pipes closed first, so this is short), polling
    /// instead of blocking a thread of the pool.
    static func waitForExit(_ process: Process) async {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(5)) }
        process.waitUntilExit()
    }

    /// Kills a process still running after its time, from a dispatch timer.
    final class Deadline: Sendable {
        private let state = Mutex((killed: false, cancelled: false))

        init(process: Process, after timeout: Duration) {
            let pid = process.processIdentifier
            let seconds = timeout.seconds
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                let kill = state.withLock { state -> Bool in
                    guard !state.cancelled else { return false }
                    state.killed = true
                    return true
                }
                if kill { Glibc.kill(pid, SIGKILL) }
            }
        }

        var killed: Bool { state.withLock { $0.killed } }
        func cancel() { state.withLock { $0.cancelled = true } }
    }

    /// A `digest` process running in the background, its output going to files.
    package final class Running: @unchecked Sendable {
        // `process` is only touched through its own thread-safe methods.
        package let process: Process
        package let stdoutPath: String
        package let stderrPath: String

        init(process: Process, stdoutPath: String, stderrPath: String) {
            self.process = process
            self.stdoutPath = stdoutPath
            self.stderrPath = stderrPath
        }

        package var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
        package var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }

        /// Lines of stderr containing `marker` so far.
        package func lines(containing marker: String) -> Int {
            stderr.split(separator: "\n").filter { $0.contains(marker) }.count
        }

        /// Waits for the process to end and returns its output.
        package func wait() -> Output {
            process.waitUntilExit()
            return Output(
                status: process.terminationStatus, stdout: stdout, stderr: stderr,
                signalled: process.terminationReason == .uncaughtSignal)
        }

        /// Waits for the process to end without holding a thread of the concurrency pool (tests on
        /// that pool would starve otherwise); one still running after `timeout` is killed and the
        /// call throws ``DigestBinaryTimeout``.
        package func finish(timeout: Duration = .seconds(300)) async throws -> Output {
            let deadline = ContinuousClock.now + timeout
            while process.isRunning {
                if ContinuousClock.now > deadline {
                    kill()
                    throw DigestBinaryTimeout(arguments: process.arguments ?? [], timeout: timeout, stderr: stderr)
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            return wait()
        }

        /// SIGKILL, as a crash or an OOM kill would end it.
        package func kill() {
            if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// Starts `digest` in the background with its output in files under `directory`.
    package static func start(_ arguments: [String], name: String, in directory: URL) throws -> Running {
        let process = makeProcess(arguments)
        let out = directory.appendingPathComponent("\(name).out").path
        let err = directory.appendingPathComponent("\(name).err").path
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try launch(process)
        return Running(process: process, stdoutPath: out, stderrPath: err)
    }

    /// Starts `digest`, waits until its stderr has shown `lines` lines containing `marker`, then
    /// kills it with SIGKILL. Returns whether it was killed while still running. The reading is done
    /// on a dispatch thread, not one of the concurrency pool; a process that shows neither its lines
    /// nor its end within `timeout` is killed and the call throws ``DigestBinaryTimeout``.
    package static func runAndKill(
        _ arguments: [String], afterLines lines: Int, containing marker: String, timeout: Duration = .seconds(300)
    ) async throws -> Bool {
        let process = makeProcess(arguments)
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try launch(process)
        let deadline = Deadline(process: process, after: timeout)
        let (seen, buffer) = await withCheckedContinuation { (continuation: CheckedContinuation<(Int, String), Never>) in
            DispatchQueue.global().async {
                var seen = 0
                var buffer = ""
                let handle = err.fileHandleForReading
                while seen < lines {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }  // the process ended first
                    buffer += String(decoding: chunk, as: UTF8.self)
                    seen = buffer.components(separatedBy: "\n").filter { $0.contains(marker) }.count
                }
                continuation.resume(returning: (seen, buffer))
            }
        }
        deadline.cancel()
        if deadline.killed { throw DigestBinaryTimeout(arguments: arguments, timeout: timeout, stderr: buffer) }
        let killedWhileRunning = seen >= lines && process.isRunning
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        await waitForExit(process)
        return killedWhileRunning && process.terminationReason == .uncaughtSignal
    }
}

/// A `digest` process that outlived the time its test gave it, with what it printed to stderr.
package struct DigestBinaryTimeout: Error, CustomStringConvertible {
    package var arguments: [String]
    package var timeout: Duration
    package var stderr: String

    package var description: String {
        "digest \(arguments.joined(separator: " ")) was still running after \(timeout) and was killed; the end of its stderr:\n"
            + stderr.split(separator: "\n", omittingEmptySubsequences: false).suffix(20).joined(separator: "\n")
    }
}

private final class LockedData: @unchecked Sendable {
    // Written once by one reader thread before `group.leave()`, read once the group has notified.
    private var data = Data()
    func set(_ value: Data) { data = value }
    func get() -> Data { data }
}

/// A temporary directory removed when the value is released.
package final class TemporaryDirectory: Sendable {
    package let url: URL

    package init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("digest-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    package func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Writes `lines` as a file and returns its path.
    @discardableResult
    package func write(_ name: String, lines: [String]) throws -> String {
        let path = self.path(name)
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
