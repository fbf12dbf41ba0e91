import DigestTesting
import Foundation
import Testing

/// The systemd units in `deploy/` are what systemd accepts: `systemd-analyze verify` (where the
/// machine has it) finds nothing to say about them, with `ExecStart=` pointing at the built binary.
@Suite struct DeployUnitsTests {
    static let deploy = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy")
    static let analyze = "/usr/bin/systemd-analyze"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: analyze), "systemd-analyze is not installed"))
    func theUnitsVerify() throws {
        let dir = try TemporaryDirectory()
        let units = try FileManager.default.contentsOfDirectory(atPath: Self.deploy.path).filter {
            $0.hasSuffix(".service") || $0.hasSuffix(".timer")
        }.sorted()
        #expect(units == ["digest-run.service", "digest-run.timer", "digest-send.service"])
        for unit in units {
            let text = try String(contentsOf: Self.deploy.appendingPathComponent(unit), encoding: .utf8)
            try text.replacingOccurrences(of: "/usr/local/bin/digest", with: DigestBinary.path)
                .write(toFile: dir.path(unit), atomically: true, encoding: .utf8)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.analyze)
        process.arguments = ["verify", "--man=no"] + units.map { dir.path($0) }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try DigestBinary.launch(process)
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && said.isEmpty, "\(said)")
        // The sender is not restarted when its key or configuration is refused.
        let send = try String(contentsOf: Self.deploy.appendingPathComponent("digest-send.service"), encoding: .utf8)
        #expect(send.contains("RestartPreventExitStatus=78") && send.contains("LoadCredential="))
    }
}
