import Testing

@testable import DigestFakes

/// The fake push service's reading of a request.
@Suite struct WebPushRequestRulesTests {
    /// The fake push service reads `Authorization` as a push service would: `t` and `k` in either
    /// order, blanks around the parts, the scheme in any case; anything short of both is no VAPID.
    @Test func theFakeReadsTheAuthorizationsParameters() {
        let read = { (header: String) in WebPushRequestRules.vapidParameters(header).map { "\($0.token)|\($0.key)" } }
        #expect(read("vapid t=a.b.c, k=BKEY") == "a.b.c|BKEY")
        #expect(read("  VAPID k=BKEY ,\tt=a.b.c  ") == "a.b.c|BKEY")
        #expect(read("Vapid t=a.b.c,k=BKEY,x=1") == "a.b.c|BKEY")
        #expect(read("vapid t=a.b.c") == nil)
        #expect(read("vapid t=, k=BKEY") == nil)
        #expect(read("bearer t=a.b.c, k=BKEY") == nil)
        #expect(read("vapid\u{0}t=a.b.c, k=BKEY") == nil)
        #expect(read("vapid") == nil && read("") == nil)
    }
}
