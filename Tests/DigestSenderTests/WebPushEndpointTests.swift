import Testing

@testable import DigestSender

/// A subscription's endpoint split for the request: origin (the VAPID audience and the connections'
/// key), host (the policy's question) and `:path`, or the reason it is not sent to.
@Suite struct WebPushEndpointTests {
    @Test(arguments: [
        ("https://fcm.googleapis.com/fcm/send/dA1b:APA91b-x_y~z", "https://fcm.googleapis.com", "fcm.googleapis.com", "/fcm/send/dA1b:APA91b-x_y~z"),
        ("HTTPS://Updates.Push.Services.Mozilla.com:443/wpush/v2/gAAA%3D%3D?x=1&y=2#frag", "https://updates.push.services.mozilla.com",
         "updates.push.services.mozilla.com", "/wpush/v2/gAAA%3D%3D?x=1&y=2"),
        ("https://127.0.0.1:41631/push/u-1", "https://127.0.0.1:41631", "127.0.0.1", "/push/u-1"),
        ("https://[::1]:8443/push", "https://[::1]:8443", "::1", "/push"),
        ("https://[2001:db8::7]/p", "https://[2001:db8::7]", "2001:db8::7", "/p"),
        ("https://web.push.apple.com", "https://web.push.apple.com", "web.push.apple.com", "/"),
        ("https://web.push.apple.com?token=1", "https://web.push.apple.com", "web.push.apple.com", "/?token=1"),
        ("https://host.example:/x", "https://host.example", "host.example", "/x"),
    ])
    func splitsAnEndpoint(endpoint: String, origin: String, host: String, path: String) throws {
        let split = try WebPushEndpoint(endpoint)
        #expect(split.origin == origin && split.host == host && split.path == path)
    }

    @Test(arguments: [
        ("http://fcm.googleapis.com/fcm/send/x", "the push endpoint's scheme is http: only https is sent to"),
        ("mailto:push@example.com", "the push endpoint is not a URL"),
        ("fcm.googleapis.com/fcm/send/x", "the push endpoint is not a URL"),
        ("https:///fcm/send/x", "the push endpoint has no host"),
        ("https://user:secret@fcm.googleapis.com/fcm/send/x", "the push endpoint holds a user name or password"),
        ("https://fcm.googleapis.com:99999/x", "the push endpoint's port is not 1 to 65535"),
        ("https://fcm.googleapis.com:0/x", "the push endpoint's port is not 1 to 65535"),
        ("https://fcm.googleapis.com:44a/x", "the push endpoint's port is not 1 to 65535"),
        ("https://[::1/x", "the push endpoint's host is not a URL host"),
        ("https://[::1]x/x", "the push endpoint's host is not a URL host"),
        ("https://[]/x", "the push endpoint's host is not a URL host"),
        ("https://fcm googleapis.com/x", "the push endpoint's host is not a URL host"),
        ("https://fcm.googleapis.com/fcm/send/a b", "the push endpoint's path holds a character a URL does not"),
        ("https://fcm.googleapis.com/fcm/send/<x>", "the push endpoint's path holds a character a URL does not"),
        ("https://fcm.googleapis.com/fcm/send/é", "the push endpoint's path holds a character a URL does not"),
        ("https://fcm.googleapis.com/fcm/send/%zz", "the push endpoint's path holds a % not followed by two hex digits"),
        ("https://fcm.googleapis.com/fcm/send/%4", "the push endpoint's path holds a % not followed by two hex digits"),
    ])
    func refusesWhatIsNotAPushEndpoint(endpoint: String, reason: String) {
        let error = #expect(throws: WebPushError.self) { try WebPushEndpoint(endpoint) }
        #expect(error?.message == reason)
        #expect(error.map { !$0.message.contains("secret") && !$0.message.contains("/fcm/send") } ?? false)
    }
}
