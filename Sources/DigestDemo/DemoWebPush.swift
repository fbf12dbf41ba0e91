package import Crypto
package import DigestCore
import Foundation

/// The demo's standard Web Push subscribers: a web device the demo puts on Web Push gets an endpoint
/// `<base>/<subscriber id>` and real subscription keys, all drawn from its token, so the same demo
/// gives the same subscriptions, and whoever knows a subscriber's id (the demo's fake push service,
/// from the path it is sent to) can remake the subscriber's private key and decrypt what it gets.
///
/// ```swift
/// let device = DemoWebPush.device(token: token, base: "https://127.0.0.1:8443/push")
/// // the fake push service, for a request to /push/<id>:
/// let secrets = DemoWebPush.secrets(subscriber: id)   // private key and auth secret
/// ```
///
/// The keys are throwaway demo keys: anyone can remake them from the id.
package enum DemoWebPush {
    /// Where the demo's subscriptions point unless told otherwise (`digest demo --webpush-base`).
    package static let defaultBase = "https://127.0.0.1:8443/push"

    /// A subscriber's secrets, which a browser keeps: its P-256 private key (whose public key is the
    /// subscription's `p256dh`) and its 16-byte `auth` secret.
    package struct Secrets: Sendable {
        package let privateKey: P256.KeyAgreement.PrivateKey
        package let auth: [UInt8]

        /// The subscription's keys as `PushSubscription.toJSON()` gives them: base64url, no padding.
        package var keys: Device.SubscriptionKeys {
            Device.SubscriptionKeys(
                p256dh: Base64URL.encode(Array(privateKey.publicKey.x963Representation)), auth: Base64URL.encode(auth))
        }
    }

    /// The subscriber id of the web device with `token`: 24 hex digits of the token's SHA-256, the last
    /// path segment of its endpoint.
    package static func subscriberID(token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).prefix(12).map { String(format: "%02x", $0) }.joined()
    }

    /// The secrets of subscriber `id`: the private key's scalar and the auth secret are SHA-256 hashes
    /// of the id (a scalar outside the curve's order, which one hash in 2³² would give, is hashed again).
    package static func secrets(subscriber id: String) -> Secrets {
        let seed = Array(SHA256.hash(data: Array("digest demo web push subscriber \(id)".utf8)))
        func hash(_ label: UInt8, _ round: UInt8 = 0) -> [UInt8] { Array(SHA256.hash(data: seed + [label, round])) }
        var round: UInt8 = 0
        while true {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: hash(1, round)) {
                return Secrets(privateKey: key, auth: Array(hash(2).prefix(16)))
            }
            round &+= 1
        }
    }

    /// The Web Push device the demo makes of the web device with `token`: endpoint `<base>/<id>`, the
    /// subscriber's public keys.
    package static func device(token: String, base: String) -> Device {
        let id = subscriberID(token: token)
        return Device(endpoint: "\(base)/\(id)", keys: secrets(subscriber: id).keys)
    }

    /// The secrets of every Web Push device among `devices`, by endpoint: what a fake push service
    /// needs to decrypt what is sent to each (the subscriber id is the endpoint's last path segment).
    package static func secrets(of devices: some Sequence<Device>) -> [String: Secrets] {
        var found: [String: Secrets] = [:]
        for device in devices where device.provider == .webpush {
            guard let id = device.token.split(separator: "/").last else { continue }
            found[device.token] = secrets(subscriber: String(id))
        }
        return found
    }
}
