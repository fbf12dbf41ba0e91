import Testing

@testable import DigestCore

/// The Web Push row's `headers`: written compactly, read back, and nothing else read.

@Suite struct WebPushHeadersTests {
    let keys = (p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg")

    @Test func writesACompactObjectAndReadsItBack() throws {
        let headers = WebPushHeaders(urgency: .normal, topic: "digest-2026-W47", expiresAt: 1_796_025_600, p256dh: keys.p256dh, auth: keys.auth)
        #expect(headers.json == #"{"urgency":"normal","topic":"digest-2026-W47","expires":1796025600,"p256dh":"\#(keys.p256dh)","auth":"\#(keys.auth)"}"#)
        #expect(try WebPushHeaders(json: Array(headers.json.utf8)) == headers)
        var untopical = headers
        untopical.topic = nil
        untopical.urgency = .veryLow
        #expect(!untopical.json.contains("topic"))
        #expect(try WebPushHeaders(json: Array(untopical.json.utf8)) == untopical)
    }

    @Test func readsAnyLayoutOfTheSameObject() throws {
        let spaced = " {\n \"auth\" : \"\(keys.auth)\",\t\"p256dh\":\"\(keys.p256dh)\", \"expires\": 1796025600, \"urgency\":\"high\" }\r\n"
        #expect(try WebPushHeaders(json: Array(spaced.utf8)) == WebPushHeaders(urgency: .high, topic: nil, expiresAt: 1_796_025_600, p256dh: keys.p256dh, auth: keys.auth))
    }

    @Test func ttlCountsDownToZero() {
        let headers = WebPushHeaders(topic: nil, expiresAt: 1_796_025_600, p256dh: keys.p256dh, auth: keys.auth)
        #expect(headers.ttl(now: 1_796_025_600 - 604_800) == 604_800)
        #expect(headers.ttl(now: 1_796_025_600) == 0)
        #expect(headers.ttl(now: 1_796_025_601) == 0)
    }

    @Test func topicsAreOneToThirtyTwoBase64URLCharacters() {
        #expect(WebPushHeaders.isValidTopic("digest-2026-W47"))
        #expect(WebPushHeaders.isValidTopic(String(repeating: "a", count: 32)))
        #expect(!WebPushHeaders.isValidTopic(String(repeating: "a", count: 33)))
        #expect(!WebPushHeaders.isValidTopic(""))
        #expect(!WebPushHeaders.isValidTopic("digest 2026"))
        #expect(!WebPushHeaders.isValidTopic("digest/2026"))
    }

    @Test(arguments: [
        (#"[]"#, "the Web Push row is not a JSON object"),
        (#"{"urgency":"normal","expires":1,"p256dh":"a","auth":"b","ttl":3}"#, "ttl: unknown key"),
        (#"{"expires":1,"p256dh":"a","auth":"b"}"#, "urgency: missing"),
        (#"{"urgency":"urgent","expires":1,"p256dh":"a","auth":"b"}"#, "urgency: not very-low, low, normal or high"),
        (#"{"urgency":"low","topic":"a b","expires":1,"p256dh":"a","auth":"b"}"#, "topic: not 1 to 32 base64url characters"),
        (#"{"urgency":"low","p256dh":"a","auth":"b"}"#, "expires: missing"),
        (#"{"urgency":"low","expires":1.5,"p256dh":"a","auth":"b"}"#, "expires: not whole Unix seconds"),
        (#"{"urgency":"low","expires":true,"p256dh":"a","auth":"b"}"#, "expires: not whole Unix seconds"),
        (#"{"urgency":"low","expires":1,"p256dh":"a+b","auth":"b"}"#, "p256dh: not base64url"),
        (#"{"urgency":"low","expires":1,"p256dh":"a"}"#, "auth: missing"),
        (#"{"urgency":"low","expires":"1","p256dh":"a","auth":"b"}"#, "expires: not whole Unix seconds"),
        (#"{"urgency":"low","expires":1e9,"p256dh":"a","auth":"b"}"#, "expires: not whole Unix seconds"),
        (#"{"urgency":"low","expires":99999999999999999999,"p256dh":"a","auth":"b"}"#, "expires: not whole Unix seconds"),
        (#"{"urgency":"low","expires":1,"p256dh":"a","auth":null}"#, "auth: not a non-empty string"),
        (#"{"urgency":"low","expires":1,"p256dh":"a","auth":""}"#, "auth: not a non-empty string"),
        (#"{"urgency":"low","urgency":"high","expires":1,"p256dh":"a","auth":"b"}"#, "urgency: given twice"),
        (#"{"urgency":"low","expires":1,"p256dh":"a","auth":{"b":1}}"#, "the Web Push row is not a JSON object"),
        (#"{"urgency":"low","expires":1,"p256dh":"a\u0062","auth":"b"}"#, "the Web Push row is not a JSON object"),
        (#"{"urgency":"low","expires":1,"p256dh":"a","auth":"b"} x"#, "the Web Push row is not a JSON object"),
        (#"{"urgency":"low","expires":1,"p256dh":"a","auth":"b",}"#, "the Web Push row is not a JSON object"),
        (#"{"urgency":"low","expires":1,"p256dh":"a","auth":"b""#, "the Web Push row is not a JSON object"),
        ("", "the Web Push row is not a JSON object"),
    ])
    func refusesWhatItDidNotWrite(json: String, reason: String) {
        let error = #expect(throws: WebPushHeadersError.self) { try WebPushHeaders(json: Array(json.utf8)) }
        #expect(error?.description == reason)
    }
}
