@testable import DigestFakes
import DigestTesting
import Testing

/// The fake server's quick check of a request body only ever accepts what the full check (Foundation's
/// parser) accepts, with the same result, and it takes the sender's own messages.
@Suite struct FCMRequestRulesQuickCheckTests {
    static func message(_ fields: String) -> String { #"{"message":{\#(fields)}}"# }

    @Test func takesTheSendersMessages() {
        for i in 1...3 {
            let body = Array(OutboxFixture.message(i).utf8)
            #expect(FCMRequestRules.quickCheck(body) != nil, "message \(i)")
            #expect(FCMRequestRules.quickCheck(body) == (try? FCMRequestRules.fullCheck(body).get()))
        }
    }

    @Test(arguments: [
        message(#""token":"t""#),
        message(#""token":"t","topic":null"#),
        message(#""token":"t","topic":"x""#),
        message(#""token":"""#),
        message(#""token":"t","token":"u""#),
        message(#""token":"t\u0041""#),
        message(#""token":"t\"\\\/\n""#),
        message(#""token":"t","data":{"a":"b","c":"d"}"#),
        message(#""token":"t","data":{"a":1}"#),
        message(#""token":"t","data":{"from":"x"}"#),
        message(#""token":"t","data":{"gcm.x":"x"}"#),
        message(#""token":"t","data":null"#),
        message(#""token":"t","android":{"priority":"high","ttl":"3.5s","collapse_key":"k"}"#),
        message(#""token":"t","android":{"priority":"urgent"}"#),
        message(#""token":"t","android":{"ttl":"2419201s"}"#),
        message(#""token":"t","android":{"ttl":"١s"}"#),
        message(#""token":"t","android":{"notification":[]}"#),
        message(#""token":"t","android":{"collapse_key":1}"#),
        message(#""token":"t","apns":{"headers":{"apns-collapse-id":"c"},"payload":{"aps":{"badge":1,"sound":"x"}}}"#),
        message(#""token":"t","apns":{"payload":{"aps":[]}}"#),
        message(#""token":"t","apns":{"payload":{"aps":{"badge":1e3}}}"#),
        message(#""token":"t","apns":{"payload":{"aps":{"badge":-0.5}}}"#),
        message(#""token":"t","apns":{"payload":{"aps":{"badge":01}}}"#),
        message(#""token":"t","webpush":{"notification":{"tag":"g","actions":[{},{}]},"fcm_options":{"link":"https://x"}}"#),
        message(#""token":"t","webpush":{"notification":{"tag":1}}"#),
        message(#""token":"t","webpush":{"notification":{"actions":[1,2,3]}}"#),
        message(#""token":"t","webpush":{"fcm_options":{"link":"http://x"}}"#),
        #"{"validate_only":true,"message":{"token":"t"}}"#,
        #"{"validate_only":1,"message":{"token":"t"}}"#,
        #"{"validate_only":"true","message":{"token":"t"}}"#,
        #"{"message":{"token":"t"},"extra":1}"#,
        #" {"message":{"token":"t"}} "#,
        #"{"message":{"token":"t"}} x"#,
        #"{"message":{"token":"t"}"#,
        #"{"message":{"token":"t",}}"#,
        #"{"message":{"token":"t"}}"# + "\u{0}",
        "{\"message\":{\"token\":\"t\tu\"}}",
        #"{"message":{"token":"ünïcödé"}}"#,
        #"{"message":"x"}"#,
        #"[]"#,
        "",
    ])
    func acceptsOnlyWhatTheFullCheckAccepts(body: String) {
        let bytes = Array(body.utf8)
        guard let quick = FCMRequestRules.quickCheck(bytes) else { return }
        #expect(quick == (try? FCMRequestRules.fullCheck(bytes).get()), "\(body)")
    }

    @Test func leavesInvalidUTF8ToTheFullCheck() {
        let bytes = Array(#"{"message":{"token":""#.utf8) + [0xC3, 0x28] + Array(#""}}"#.utf8)
        #expect(FCMRequestRules.quickCheck(bytes) == nil)
    }
}
