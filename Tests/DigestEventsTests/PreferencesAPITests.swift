import DigestCore
import DigestEvents
import DigestImport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// The preferences API of `digest collect` over real HTTP on loopback, on both stores, at the
/// collector's fixed clock (2026-11-23T12:00:00Z, ISO week 2026-W48).
@Suite struct PreferencesAPITests {
    static let appKey = "app-key-0123456789abcdef"
    static let serverKey = "server-key-0123456789abcdef"
    static let defaults = #"{"every":1,"from":null,"pausedUntil":null,"follow":[],"mute":[],"off":false}"#

    /// A store with readers `u1` and `a/b` (an id a path must percent-encode).
    static func store(_ backend: Backend) async throws -> StoreHarness {
        let store = try await StoreHarness(backend)
        let readers = ["u1", "a/b"].map {
            Reader(id: $0, locale: "en", timeZone: "Europe/Warsaw", optedOut: false, devices: [Device(token: "tok-\($0)", platform: .android)])
        }
        _ = try await store.withImporter { try await $0.sink.write(.users(readers)) }
        return store
    }

    static func collect<T: Sendable>(_ store: StoreHarness, _ body: @Sendable @escaping (Int) async throws -> T) async throws -> T {
        try await store.withCollector(keys: AppKeys(keys: [appKey]), serverKeys: AppKeys(keys: [serverKey]), body)
    }

    static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    @Test(arguments: Backend.allCases) func getPutAndPatchWithVersions(backend: Backend) async throws {
        let store = try await Self.store(backend)
        try await Self.collect(store) { port in
            let path = "/v1/readers/u1/preferences"
            let initial = try await HTTP.request("GET", port: port, path: path, key: Self.serverKey)
            #expect(initial.status == 200)
            #expect(Self.text(initial.body) == #"{"preferences":\#(Self.defaults),"version":0}"#)
            #expect(initial.etag == "\"0\"")

            // PUT: the whole object, absent keys at their defaults; the pace counts from this week.
            let put = try await HTTP.request(
                "PUT", port: port, path: path, key: Self.serverKey, contentType: "application/json; charset=utf-8",
                body: #"{"every":2,"follow":["science"],"mute":["sports"]}"#)
            #expect(put.status == 200, "\(Self.text(put.body))")
            let stored = #"{"every":2,"from":"2026-W48","pausedUntil":null,"follow":["science"],"mute":["sports"],"off":false}"#
            #expect(Self.text(put.body) == #"{"preferences":\#(stored),"version":1}"#)
            #expect(put.etag == "\"1\"")
            // The same again changes nothing: the version stays.
            let again = try await HTTP.request(
                "PUT", port: port, path: path, key: Self.serverKey, contentType: "application/json",
                body: #"{"every":2,"follow":["science"],"mute":["sports"]}"#)
            #expect(Self.text(again.body) == #"{"preferences":\#(stored),"version":1}"#)

            // PATCH: a merge patch; a list is replaced whole, null resets a key, other keys stay.
            let patch = try await HTTP.request(
                "PATCH", port: port, path: path, key: Self.serverKey, contentType: "application/merge-patch+json",
                body: #"{"mute":["football","politics"],"follow":null,"pausedUntil":"2026-12-14"}"#)
            #expect(patch.status == 200, "\(Self.text(patch.body))")
            #expect(
                Self.text(patch.body)
                    == #"{"preferences":{"every":2,"from":"2026-W48","pausedUntil":"2026-12-14","follow":[],"mute":["football","politics"],"off":false},"version":2}"#
            )
            // application/json is taken for a merge patch too; If-Match with the current version.
            let off = try await HTTP.request(
                "PATCH", port: port, path: path, key: Self.serverKey, contentType: "application/json", ifMatch: "\"2\"",
                body: #"{"off":true,"pausedUntil":null}"#)
            #expect(off.status == 200)
            #expect(off.etag == "\"3\"")
            // A stale If-Match: 412, nothing stored.
            for (method, body) in [("PATCH", #"{"off":false}"#), ("PUT", #"{"every":4}"#)] {
                let stale = try await HTTP.request(
                    method, port: port, path: path, key: Self.serverKey, contentType: "application/json", ifMatch: "\"2\"", body: body)
                #expect(stale.status == 412, "\(method)")
                #expect(stale.etag == "\"3\"")
            }
            let now = try await HTTP.request("GET", port: port, path: path, key: Self.serverKey)
            #expect(
                Self.text(now.body)
                    == #"{"preferences":{"every":2,"from":"2026-W48","pausedUntil":null,"follow":[],"mute":["football","politics"],"off":true},"version":3}"#
            )

            // Every change recorded, newest first; a refused request recorded nothing.
            let changes = try await HTTP.request("GET", port: port, path: path + "/changes", key: Self.serverKey)
            #expect(changes.status == 200)
            let json = try #require(try JSONSerialization.jsonObject(with: changes.body) as? [String: Any])
            let list = try #require(json["changes"] as? [[String: Any]])
            #expect(list.count == 3)
            #expect(list.allSatisfy { $0["source"] as? String == "api" && $0["message_id"] is NSNull && $0["at"] as? String == "2026-11-23T12:00:00Z" })
            #expect((list[0]["after"] as? [String: Any])?["off"] as? Bool == true)
            #expect((list[0]["before"] as? [String: Any])?["off"] as? Bool == false)
            #expect((list[2]["before"] as? [String: Any])?["every"] as? Int == 1)
            let one = try await HTTP.request("GET", port: port, path: path + "/changes?limit=1", key: Self.serverKey)
            let limited = try #require(try JSONSerialization.jsonObject(with: one.body) as? [String: Any])
            #expect((limited["changes"] as? [[String: Any]])?.count == 1)
            #expect(try await HTTP.request("GET", port: port, path: path + "/changes?limit=0", key: Self.serverKey).status == 400)
        }
        // The store holds what the API answered.
        let stored = try await store.database.preferences(of: "u1")
        #expect(stored?.version == 3 && stored?.preferences.off == true && stored?.preferences.mute == ["football", "politics"])
    }

    @Test(arguments: Backend.allCases) func keysReadersBodiesAndTypes(backend: Backend) async throws {
        let store = try await Self.store(backend)
        try await Self.collect(store) { port in
            let path = "/v1/readers/u1/preferences"
            // No key, an unknown key: 401; an app key: 403.
            #expect(try await HTTP.request("GET", port: port, path: path, key: nil).status == 401)
            #expect(try await HTTP.request("GET", port: port, path: path, key: "not-a-key-0123456789").status == 401)
            #expect(try await HTTP.request("GET", port: port, path: path, key: Self.appKey).status == 403)
            let appPut = try await HTTP.request(
                "PUT", port: port, path: path, key: Self.appKey, contentType: "application/json", body: #"{"off":true}"#)
            #expect(appPut.status == 403)
            // A reader the store does not hold: 404 for every route.
            for (method, route) in [("GET", ""), ("PUT", ""), ("PATCH", ""), ("GET", "/changes")] {
                let answer = try await HTTP.request(
                    method, port: port, path: "/v1/readers/nobody/preferences" + route, key: Self.serverKey,
                    contentType: "application/json", body: method == "GET" ? nil : "{}")
                #expect(answer.status == 404, "\(method) \(route)")
            }
            // An id with a slash, percent-encoded.
            let slashed = try await HTTP.request(
                "PUT", port: port, path: "/v1/readers/a%2Fb/preferences", key: Self.serverKey, contentType: "application/json",
                body: #"{"mute":["sports"]}"#)
            #expect(slashed.status == 200, "\(Self.text(slashed.body))")
            // Another content type: 415 (PUT takes only application/json).
            #expect(
                try await HTTP.request("PUT", port: port, path: path, key: Self.serverKey, contentType: "text/plain", body: "{}").status == 415)
            #expect(
                try await HTTP.request(
                    "PUT", port: port, path: path, key: Self.serverKey, contentType: "application/merge-patch+json", body: "{}"
                ).status == 415)
            // Over 65,536 bytes: 413.
            let big = #"{"follow":["\#(String(repeating: "x", count: 70_000))"]}"#
            #expect(
                try await HTTP.request("PUT", port: port, path: path, key: Self.serverKey, contentType: "application/json", body: big)
                    .status == 413)
            // Bad values: 400 listing every error, with the import's reasons.
            let bad = try await HTTP.request(
                "PUT", port: port, path: path, key: Self.serverKey, contentType: "application/json",
                body: #"{"every":"2","from":"2026-W60","pausedUntil":"2026-02-30","follow":["ok","",5],"mute":["a\u0007b"]}"#)
            #expect(bad.status == 400)
            let json = try #require(try JSONSerialization.jsonObject(with: bad.body) as? [String: Any])
            let errors = try #require(json["errors"] as? [[String: Any]])
            let pairs = errors.map { "\($0["field"] as? String ?? "?"):\($0["reason"] as? String ?? "?")" }
            #expect(
                Set(pairs) == [
                    "every:bad_every", "from:bad_from", "pausedUntil:bad_paused_until", "follow[1]:bad_preference_topic",
                    "follow[2]:bad_preference_topic", "mute[0]:bad_preference_topic",
                ], "\(pairs)")
            let many = #"{"mute":[\#((0...100).map { "\"t\($0)\"" }.joined(separator: ","))]}"#
            let tooMany = try await HTTP.request("PUT", port: port, path: path, key: Self.serverKey, contentType: "application/json", body: many)
            #expect(tooMany.status == 400 && Self.text(tooMany.body).contains("too_many_preference_topics"))
            // Not JSON, not an object: 400.
            #expect(
                try await HTTP.request("PUT", port: port, path: path, key: Self.serverKey, contentType: "application/json", body: "{")
                    .status == 400)
            #expect(
                try await HTTP.request("PATCH", port: port, path: path, key: Self.serverKey, contentType: "application/json", body: "[1]")
                    .status == 400)
            // Nothing refused was stored or recorded.
            let changes = try await HTTP.request("GET", port: port, path: path + "/changes", key: Self.serverKey)
            #expect(Self.text(changes.body) == #"{"changes":[]}"#)
        }
        #expect(try await store.database.preferences(of: "a/b")?.preferences.mute == ["sports"])
    }
}
