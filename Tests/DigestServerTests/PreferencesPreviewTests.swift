import DigestCore
import DigestPreview
import DigestSQLite
import DigestServer
import DigestStore
import DigestTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// What editors see of readers' preferences (issue 41, "Editors see them"): the sidecar and the
/// page show the preferences and what they left out of the picks; the template comparison counts
/// the messages the preferences shaped apart from the templates' changes. On the run's fixtures
/// (2026-W46); the stores do not keep preferences yet, so the readers get theirs here, in memory.
@Suite struct PreferencesPreviewTests {
    static let week = try! ISOWeek(parsing: FixtureDatabase.week)

    static func comparison(_ database: SQLiteDatabase) throws -> TemplateComparison<SQLiteDatabase> {
        let catalog = try TemplateCatalog(directory: DigestBinary.templates)
        return TemplateComparison(
            database: database, old: catalog, new: catalog, configuration: BatchComposer.Configuration(week: week),
            now: FixtureDatabase.now)
    }

    /// The same templates on both sides: nothing changes by the templates, and the count apart says
    /// what the preferences did. A muted first pick's topic changes a message; a pace skips a reader
    /// this week; `off` alone (opt-out before preferences) and a follow with nothing to follow are
    /// not counted.
    @Test func theComparisonCountsWhatPreferencesShapedApartFromTheTemplates() async throws {
        let dir = try TemporaryDirectory()
        let comparison = try Self.comparison(try await FixtureDatabase.make(in: dir))
        let composers = try await comparison.composers()
        let (users, missing) = try await comparison.users(ids: ["u-pl", "u-zh", "u-quiet", "u-out"])
        #expect(missing.isEmpty)
        let plain = try await comparison.compose(users, with: composers)
        #expect(plain.allSatisfy { $0.withDefaultPreferences == nil })
        var totals = ComparisonTotals()
        for reader in plain { totals.addPreferences(of: reader, messages: reader.messages(budget: 3800)) }
        #expect(totals.byPreferences == 0 && totals.skippedByPreferences == 0)

        // u-pl's first pick's first topic, muted.
        let polish = try #require(plain.first { $0.userID == "u-pl" })
        let first = try #require(polish.new.plan?.picks.first)
        let topic = try #require(composers.new.builder.pool.articles.first { $0.id == first }?.topics.first)
        var chosen = users
        for index in chosen.indices {
            switch chosen[index].reader.id {
            case "u-pl": chosen[index].reader.preferences.mute = [topic]
            case "u-zh": chosen[index].reader.preferences = ReaderPreferences(every: 2, from: ISOWeek(year: 2026, week: 47)!)
            case "u-quiet": chosen[index].reader.preferences.follow = ["no-such-topic"]
            default: break  // u-out: off, as before
            }
        }
        let compared = try await comparison.compose(chosen, with: composers)
        totals = ComparisonTotals()
        var changedByTemplates = 0
        for reader in compared {
            let messages = reader.messages(budget: 3800)
            totals.addPreferences(of: reader, messages: messages)
            changedByTemplates += messages.count { $0.changed }
        }
        #expect(changedByTemplates == 0)
        let byUser = Dictionary(uniqueKeysWithValues: compared.map { ($0.userID, $0) })
        #expect(byUser["u-out"]?.withDefaultPreferences == nil)
        #expect(byUser["u-pl"]?.new.plan?.picks.contains(first) == false)
        #expect(byUser["u-pl"]?.withDefaultPreferences?.plan?.picks.first == first)
        // u-pl's two messages (Android, iOS) changed; u-quiet's did not.
        #expect(byUser["u-pl"]?.messages(budget: 3800).map(\.byPreferences) == [true, true])
        #expect(byUser["u-quiet"]?.messages(budget: 3800).map(\.byPreferences) == [false])
        #expect(byUser["u-zh"]?.new.skipped == .notThisWeek && byUser["u-zh"]?.skippedByPreferences == true)
        #expect(totals.byPreferences == 2)
        #expect(totals.skippedByPreferences == 1)
        // Shown in the comparison's page head.
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(totals)) as? [String: Any]
        #expect(encoded?["byPreferences"] as? Int == 2 && encoded?["skippedByPreferences"] as? Int == 1)
    }

    /// preview.json's `preferences` (every key, defaults filled in) and `leftOut`; a message from a
    /// file has neither.
    @Test func theSidecarShowsThePreferencesAndWhatTheyLeftOut() throws {
        var messages = UserMessages(
            source: .computed, userID: "u-pl", week: "2026-W46", variant: "BigText", rules: [], bytes: [.android: 900],
            messages: [:], skipped: nil, due: nil)
        messages.preferences = ReaderPreferences(
            every: 2, from: ISOWeek(year: 2026, week: 46)!, pausedUntil: CivilDate(year: 2026, month: 12, day: 14), follow: ["science"],
            mute: ["sports"])
        messages.leftOut = [LeftOutCandidate(id: "a7", title: "Derby day", reason: "muted: sports")]
        let sidecar = messages.sidecar(budget: 3800)
        #expect(sidecar.preferences?.line == "every 2 weeks from 2026-W46 · paused until 2026-12-14 · follow: science · mute: sports")
        let json = try #require(try JSONSerialization.jsonObject(with: sidecar.json()) as? [String: Any])
        let preferences = try #require(json["preferences"] as? [String: Any])
        #expect(preferences["every"] as? Int == 2 && preferences["from"] as? String == "2026-W46")
        #expect(preferences["pausedUntil"] as? String == "2026-12-14" && preferences["off"] as? Bool == false)
        #expect(preferences["follow"] as? [String] == ["science"] && preferences["mute"] as? [String] == ["sports"])
        let leftOut = try #require(json["leftOut"] as? [[String: Any]])
        #expect(leftOut.count == 1 && leftOut[0]["reason"] as? String == "muted: sports" && leftOut[0]["id"] as? String == "a7")
        #expect((json["budgets"] as? [[String: Any]])?.first?["bytes"] as? Int == 900)

        let file = try #require(try JSONSerialization.jsonObject(with: PreviewSidecar(source: "file").json()) as? [String: Any])
        #expect(file["preferences"] == nil && file["leftOut"] == nil)
        #expect(PreviewSidecar.Preferences(ReaderPreferences()).line == "defaults")
    }

    /// The page's JSON carries the reader's preferences (here as the store read them: defaults, and
    /// `off` for the reader who opted out).
    @Test func thePageShowsTheReadersPreferences() async throws {
        let dir = try TemporaryDirectory()
        let app = Application(router: PreviewServerTests.server(try await FixtureDatabase.make(in: dir)).router())
        try await app.test(.router) { client in
            try await client.execute(uri: "/api/preview?user=u-pl&week=2026-W46", method: .get) { response in
                #expect(response.status == .ok)
                let page = try #require(try PreviewServerTests.json(response.body) as? [String: Any])
                let preferences = try #require(page["preferences"] as? [String: Any])
                #expect(preferences["every"] as? Int == 1 && preferences["off"] as? Bool == false)
                #expect(preferences["follow"] as? [String] == [] && preferences["mute"] as? [String] == [])
                // Every key, as the API answers: `null` for none.
                #expect(preferences["from"] is NSNull && preferences["pausedUntil"] is NSNull)
                #expect(page["leftOut"] as? [Any] == nil || (page["leftOut"] as? [Any])?.isEmpty == true)
            }
            try await client.execute(uri: "/api/preview?user=u-out&week=2026-W46", method: .get) { response in
                let page = try #require(try PreviewServerTests.json(response.body) as? [String: Any])
                #expect((page["preferences"] as? [String: Any])?["off"] as? Bool == true)
            }
            try await client.execute(uri: "/", method: .get) { response in
                #expect(String(buffer: response.body).contains("Reader's preferences"))
            }
        }
    }
}
