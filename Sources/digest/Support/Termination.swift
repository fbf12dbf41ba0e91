import ArgumentParser
import Foundation
import Synchronization
import UnixSignals

/// A command that shuts down gracefully on SIGTERM and SIGINT itself (a `ServiceGroup` with
/// `gracefulShutdownSignals`): ``Termination`` leaves those signals to it.
protocol ShutsDownOnSignals {}

/// How a command ends: its error's exit status (``ExitStatus``), and SIGTERM or SIGINT.
///
/// A command that does not shut down by itself on those signals (``ShutsDownOnSignals``) has its
/// task cancelled by the first one, so that what it opened is closed on the way out (a store closed
/// by ``DatabaseOptions/withStore(run:existing:_:)`` folds its write-ahead log back into the file);
/// once it has ended, the process ends by the same signal, as it would have without the handler. A
/// second signal ends the process at once.
enum Termination {
    /// Parses the command line, runs the command and exits with its status.
    static func main(_ root: Digest.Type) async -> Never {
        // Parsed here only to see which command it is; the task that runs it parses it again.
        guard (try? root.parseAsRoot()) is any ShutsDownOnSignals else { await runCancellingOnSignals(root) }
        await run(root, signals: nil)
    }

    /// Runs the command in a task of its own while this one watches SIGTERM and SIGINT: the first
    /// cancels the command (which exits the process once it has ended), a second ends the process.
    private static func runCancellingOnSignals(_ root: Digest.Type) async -> Never {
        let signals = ReceivedSignal()
        let command = Task { await run(root, signals: signals) }
        for await signal in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
            guard signals.record(signal) else { endBy(signal) }
            command.cancel()
        }
        fatalError("the signal sequence ended")
    }

    /// Parses and runs the command, and exits: 0, the status of its error, or by the signal that
    /// cancelled it.
    private static func run(_ root: Digest.Type, signals: ReceivedSignal?) async -> Never {
        let failure: (any Error)?
        do {
            var command = try root.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            failure = nil
        } catch {
            failure = error
        }
        if let signal = signals?.first { endBy(signal) }
        guard let failure else { root.exit() }
        if !(failure is ExitCode), let status = ExitStatus.of(failure) {
            FileHandle.standardError.write(Data("error: \(failure)\n".utf8))
            root.exit(withError: status)
        }
        root.exit(withError: failure)
    }

    /// Ends the process by `signal`, its default action restored (and the signal unblocked: the
    /// signal sources that trapped it may have blocked it to read it from a descriptor).
    private static func endBy(_ signal: UnixSignal) -> Never {
        Foundation.signal(signal.rawValue, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, signal.rawValue)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(signal.rawValue)
        exit(128 + signal.rawValue)
    }
}

/// The first termination signal received, if any.
private final class ReceivedSignal: Sendable {
    private let received = Mutex<UnixSignal?>(nil)

    /// Records `signal`; whether it is the first.
    func record(_ signal: UnixSignal) -> Bool {
        received.withLock { received in
            defer { received = received ?? signal }
            return received == nil
        }
    }

    var first: UnixSignal? { received.withLock { $0 } }
}
