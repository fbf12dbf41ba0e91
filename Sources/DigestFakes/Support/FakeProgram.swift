package import Foundation

/// What the fake servers' programs (`digest-fake-fcm`, `digest-fake-apns`, `digest-fake-webpush`)
/// share: waiting for the signal that ends them, and a benchmark's samples of their count.
package enum FakeProgram {
    /// Returns once SIGTERM or SIGINT arrives (both are ignored from now on: the program reports and
    /// exits itself).
    package static func waitForStop() async {
        let (stop, continuation) = AsyncStream<Void>.makeStream()
        let sources = [SIGTERM, SIGINT].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
            source.setEventHandler { continuation.yield() }
            source.resume()
            return source
        }
        for await _ in stop { break }
        sources.forEach { $0.cancel() }
    }

    /// Appends `<unix time> <count()>` to the file at `path` (made anew) every 0.2 s, from a timer of
    /// this process: a benchmark's samples without a client polling `/stats`. Cancel the timer to stop.
    package static func sample(to path: String, _ count: @escaping @Sendable () -> Int) throws -> any DispatchSourceTimer {
        FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "samples"))
        timer.schedule(deadline: .now(), repeating: .milliseconds(200))
        timer.setEventHandler {
            handle.write(Data(String(format: "%.3f %d\n", Date().timeIntervalSince1970, count()).utf8))
        }
        timer.resume()
        return timer
    }
}
