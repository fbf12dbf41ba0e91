import Crypto
import DigestCore
import Foundation

/// The application server's VAPID key (RFC 8292): an ECDSA P-256 private key that signs the JWT of
/// every push request, and whose public key a site's page passes to `pushManager.subscribe` as
/// `applicationServerKey`: a subscription made with it accepts only requests signed by this key.
///
/// ```swift
/// let key = try VAPIDKey(contentsOf: "vapid.pem")
/// print(key.publicKey)  // "BO…", 87 characters
/// ```
///
/// Read from PEM: PKCS#8 (`BEGIN PRIVATE KEY`, what `digest webpush keygen` and
/// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` write) or SEC1
/// (`BEGIN EC PRIVATE KEY`, what `openssl ecparam -name prime256v1 -genkey` writes). Neither the key
/// nor its file's contents ever appear in an error or a log.
public struct VAPIDKey: Sendable {
    let key: P256.Signing.PrivateKey
    /// The public key: base64url (no padding) of its 65-byte uncompressed point.
    public let publicKey: String

    init(key: P256.Signing.PrivateKey) {
        self.key = key
        self.publicKey = Base64URL.encode(Array(key.publicKey.x963Representation))
    }

    /// A new random key.
    package static func generate() -> VAPIDKey { VAPIDKey(key: P256.Signing.PrivateKey()) }

    /// A key from its PEM text; `source` names it in errors (the file's path).
    package init(pem: String, source: String? = nil) throws(SenderError) {
        guard pem.contains("-----BEGIN") else {
            throw SenderError(.credentials, "the VAPID key is not a PEM file (make one with `digest webpush keygen --out FILE`)", context: source)
        }
        do {
            self.init(key: try P256.Signing.PrivateKey(pemRepresentation: pem))
        } catch {
            throw SenderError(
                .credentials, "the VAPID key is not an ECDSA P-256 private key in PEM (PKCS#8 BEGIN PRIVATE KEY or SEC1 BEGIN EC PRIVATE KEY)",
                context: source)
        }
    }

    /// The key in the PEM file at `path`.
    public init(contentsOf path: String) throws(SenderError) {
        let pem: String
        do {
            pem = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            let missing = !FileManager.default.fileExists(atPath: path)
            throw SenderError(.credentials, missing ? "the VAPID key file does not exist" : "cannot read the VAPID key file (\((error as NSError).localizedDescription))", context: path)
        }
        try self.init(pem: pem, source: path)
    }

    /// The private key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), for the key's file.
    package var pkcs8PEM: String { key.pemRepresentation }
}
