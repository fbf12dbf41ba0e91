import Testing

@testable import DigestCore

/// Tokens in logs and `queue peek`: `…` and the last four characters; a Web Push endpoint keeps its
/// origin (the push service), never its path or any user information.
@Suite struct DeviceMaskTests {
    @Test(arguments: [
        ("fcm-token-abcdef:APA91bXk9Q", "…Xk9Q"),
        ("0a1b2c3d4e5f60718293a4b5c6d7e8f9", "…e8f9"),
        ("https://fcm.googleapis.com/fcm/send/dE2x:APA91bXk9Q", "https://fcm.googleapis.com/…Xk9Q"),
        ("https://127.0.0.1:8443/push/0123456789abcdef01234567", "https://127.0.0.1:8443/…4567"),
        ("https://user:secret@push.example.net/e/1?q#f", "https://push.example.net/…?q#f"),
        ("https:///e/1", "…/e/1"),
        ("ab", "…ab"),
    ])
    func aTokenIsMaskedSo(token: String, masked: String) {
        #expect(Device.masked(token) == masked)
        #expect(Device(token: token, platform: .web).maskedToken == masked)
    }
}
