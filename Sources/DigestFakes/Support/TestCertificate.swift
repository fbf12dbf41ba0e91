package import Foundation

/// A throwaway self-signed certificate for `127.0.0.1` and `localhost`, made with the `openssl` program
/// (Debian's openssl package), for HTTPS tests on loopback.
package enum TestCertificate {
    /// Writes `cert.pem` and `key.pem` into `directory`; nil when openssl is not installed.
    package static func make(in directory: URL) throws -> FakeFCMServer.TLS? {
        guard let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: FileManager.default.isExecutableFile) else {
            return nil
        }
        let certificate = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout", key, "-out", certificate,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return FakeFCMServer.TLS(certificatePath: certificate, privateKeyPath: key)
    }
}
