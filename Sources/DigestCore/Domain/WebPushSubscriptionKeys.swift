package import Crypto

/// The keys of a browser's push subscription (`PushSubscription.toJSON().keys`): the user agent's
/// P-256 public key `p256dh` (base64url of the 65-byte uncompressed point) and its 16-byte `auth`
/// secret. Checked once when made: a value of this type always encrypts.
///
/// ```swift
/// let keys = try WebPushSubscriptionKeys(p256dh: json.keys.p256dh, auth: json.keys.auth)
/// let body = try WebPushEncryption.encrypt(Array(payload.utf8), to: keys)
/// ```
package struct WebPushSubscriptionKeys: Sendable {
    /// The uncompressed point: `0x04 ‖ x ‖ y`.
    package static let pointBytes = 65
    package static let authBytes = 16

    /// The user agent's public key, on the curve.
    package let publicKey: P256.KeyAgreement.PublicKey
    /// Its 65 bytes, as they enter the key derivation.
    package let point: [UInt8]
    /// The authentication secret.
    package let auth: [UInt8]

    /// Keys from the subscription's base64url texts (padding optional); throws
    /// ``Invalid`` saying which key is wrong and how, without its value.
    package init(p256dh: String, auth: String) throws(WebPushSubscriptionKeys.Invalid) {
        guard let point = Base64URL.decode(p256dh) else {
            throw Invalid("the subscription's p256dh key is not base64url")
        }
        guard point.count == Self.pointBytes, point.first == 0x04 else {
            throw Invalid(
                "the subscription's p256dh key is \(point.count) bytes\(point.count == Self.pointBytes ? " not starting with 0x04" : ""): a P-256 public key is an uncompressed point of 65 bytes starting with 0x04")
        }
        guard let secret = Base64URL.decode(auth) else {
            throw Invalid("the subscription's auth secret is not base64url")
        }
        guard secret.count == Self.authBytes else {
            throw Invalid("the subscription's auth secret is \(secret.count) bytes: it must be 16")
        }
        do {
            publicKey = try P256.KeyAgreement.PublicKey(x963Representation: point)
        } catch {
            throw Invalid("the subscription's p256dh key is not a point on the P-256 curve")
        }
        self.point = point
        self.auth = secret
    }

    /// Why subscription keys are unusable, in a sentence that names the key and never shows it.
    package struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        package let message: String

        init(_ message: String) { self.message = message }

        package var description: String { message }
    }
}
