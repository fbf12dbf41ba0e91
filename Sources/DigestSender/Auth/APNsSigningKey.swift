import Crypto
public import Foundation

/// An APNs authentication key: the `.p8` file from the Apple developer account (an ECDSA P-256
/// private key in PKCS#8 PEM), its 10-character key id, and the team id it belongs to. Provider tokens
/// (``APNsProviderToken``) are signed with it.
///
/// ```swift
/// let key = try APNsSigningKey(contentsOf: "AuthKey_ABCDE12345.p8", keyID: "ABCDE12345", teamID: "TEAM123456")
/// ```
///
/// Neither the key nor its file's contents ever appear in an error or a log.
public struct APNsSigningKey: Sendable {
    /// The key id (`kid`), 10 characters.
    public let keyID: String
    /// The team id (`iss`), 10 characters.
    public let teamID: String
    let key: P256.Signing.PrivateKey

    /// A key from its PEM text; `source` names it in errors (the file's path).
    public init(pem: String, keyID: String, teamID: String, source: String? = nil) throws(SenderError) {
        try Self.check(keyID, "key id", option: "--apns-key-id", source: source)
        try Self.check(teamID, "team id", option: "--apns-team-id", source: source)
        guard pem.contains("-----BEGIN") else {
            throw SenderError(.credentials, "the APNs key is not a PEM file (expected the AuthKey_\(keyID).p8 downloaded from the Apple developer account)", context: source)
        }
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw SenderError(.credentials, "the APNs key is not an ECDSA P-256 private key in PEM (an APNs .p8 key is one)", context: source)
        }
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The key in the `.p8` file at `path`.
    public init(contentsOf path: String, keyID: String, teamID: String) throws(SenderError) {
        let pem: String
        do {
            pem = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            let missing = !FileManager.default.fileExists(atPath: path)
            throw SenderError(.credentials, missing ? "the APNs key file does not exist" : "cannot read the APNs key file (\((error as NSError).localizedDescription))", context: path)
        }
        try self.init(pem: pem, keyID: keyID, teamID: teamID, source: path)
    }

    /// Apple's key and team ids: 10 letters and digits.
    private static func check(_ id: String, _ what: String, option: String, source: String?) throws(SenderError) {
        guard id.utf8.count == 10, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
            throw SenderError(.credentials, "the APNs \(what) \"\(id)\" is not 10 letters and digits (\(option): as the Apple developer account shows it)", context: source)
        }
    }
}
