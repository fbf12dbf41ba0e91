import DigestTesting
import Foundation
import Testing

/// `--actions` and `--reply-key-file` on `digest run`, through the binary: a button that changes the
/// reader's preferences without reply keys is a usage error naming the flag.
@Suite("Action options")
struct ActionsOptionsTests {
    @Test(arguments: ["open,fewer", "pause", "later,off"])
    func aPreferenceButtonNeedsAReplyKeyFile(actions: String) async throws {
        let run = try await DigestBinary.run(["run", "--db", "/nonexistent/digest.sqlite", "--week", "2026-W46", "--actions", actions])
        #expect(run.status == 64 && run.stderr.contains("needs --reply-key-file"), "\(run.stderr)")
    }

    @Test func unknownOrRepeatedActionsAndBadFlagsAreUsageErrors() async throws {
        for arguments in [
            ["--actions", "open,share"], ["--actions", "open,open"], ["--ios-interruption-level", "critical"],
            ["--reply-key-file", "/nonexistent/keys"],
        ] {
            let run = try await DigestBinary.run(["run", "--db", "/nonexistent/digest.sqlite", "--week", "2026-W46"] + arguments)
            #expect(run.status == 64, "\(arguments): \(run.stderr)")
        }
        let dir = try TemporaryDirectory()
        let short = dir.path("short-keys")
        try "too short\n".write(toFile: short, atomically: true, encoding: .utf8)
        let run = try await DigestBinary.run(["run", "--db", "/nonexistent/digest.sqlite", "--week", "2026-W46", "--reply-key-file", short])
        #expect(run.status == 64 && run.stderr.contains("at least 16"), "\(run.stderr)")
    }
}
