package import DigestCore
package import DigestPreview
import Foundation

/// One changed message of a template comparison, drawn with both folders: what changed, and each
/// surface's old and new PNG with its visible lines (`compare.json`'s entries, the page's comparison).
package struct ComparisonEntry: Codable, Sendable {
    /// One folder's side of the message, as planned.
    package struct Side: Codable, Sendable {
        package var variant: String?
        /// Why this folder gave the reader no message (a ``SkipReason``'s name).
        package var skipped: String?
        package var bytes: Int?
        package var budget: Int
        package var rules: [String]
    }

    /// One surface and state, old beside new.
    package struct Surface: Codable, Sendable {
        /// One side's drawing: where its PNG is and the lines it shows.
        package struct Drawing: Codable, Sendable {
            /// The PNG, relative to `index.html` (a file) or to the page (a cached image).
            package var image: String
            /// Size in CSS pixels.
            package var width: Int
            package var height: Int
            package var texts: [TextLines]
        }

        package var state: String
        /// The new side's surface name (the old one's when only it has the platform).
        package var surface: String
        package var old: Drawing?
        package var new: Drawing?
        /// Roles (`title`, `body`, …) whose visible lines differ.
        package var changedRoles: [String]
    }

    package var user: String
    /// `nil` for a user id that names no user.
    package var platform: String?
    package var locale: String?
    /// What changed: `text`, `variant`, `skipped`, `newly_cut`, `no_longer_cut`, `over_budget`,
    /// `within_budget`, `rules`; `error` alone for a reader that could not be compared.
    package var changes: [String]
    /// Why the reader could not be compared, or why one folder gave them no message.
    package var error: String?
    package var old: Side?
    package var new: Side?
    /// Where the new message shows "…" and the old one did not: `<rule>` for a text rule's cut
    /// (`header.truncated`), `<platform>-<state> <role>` for a surface's (`ios-collapsed body`).
    package var newlyCut: [String] = []
    package var noLongerCut: [String] = []
    package var rulesAdded: [String] = []
    package var rulesRemoved: [String] = []
    package var surfaces: [Surface] = []

    /// An entry for a user id with no user behind it.
    package static func missing(user: String) -> ComparisonEntry {
        ComparisonEntry(user: user, changes: ["error"], error: "no user with this id")
    }

    /// The variant the message is counted under: the new one (the old one when only it has one).
    package var variant: String? { new?.variant ?? old?.variant }
}

extension ComparisonEntry {
    /// Draws both sides of a changed message on `pool` (the preview renderer) and says what changed;
    /// `place` stores each PNG and returns the address the entry names it by.
    package static func render(
        _ message: MessageComparison, pool: PreviewPool, scale: Int,
        place: @Sendable (_ side: String, _ preview: RenderedPreview) async throws -> String
    ) async throws -> ComparisonEntry {
        func side(_ side: MessageComparison.Side) -> Side {
            Side(variant: side.variant, skipped: side.skipped, bytes: side.bytes, budget: side.budget, rules: side.rules)
        }
        var entry = ComparisonEntry(
            user: message.userID, platform: message.platform.rawValue, locale: message.locale, changes: [], old: side(message.old),
            new: side(message.new))
        entry.rulesAdded = message.rulesAdded
        entry.rulesRemoved = message.rulesRemoved
        var problems: [String] = []
        if message.old.skipped != message.new.skipped {
            problems += [("old", message.old.skipped), ("new", message.new.skipped)].compactMap { name, skipped in
                skipped.map { "the \(name) templates give no message: \($0)" }
            }
        }
        func draw(_ bytes: [UInt8]?, name: String) async throws -> [RenderedPreview] {
            guard let bytes else { return [] }
            do {
                let parsed = try PreviewMessage(json: bytes)
                return try await pool.render(parsed, platforms: [message.platform], scale: scale)
            } catch let error as PreviewError {
                problems.append("the \(name) message cannot be drawn: \(error)")
                return []
            }
        }
        let olds = try await draw(message.old.message, name: "old"), news = try await draw(message.new.message, name: "new")
        for state in PreviewState.allCases {
            let old = olds.first { $0.state == state }, new = news.first { $0.state == state }
            guard let any = new ?? old else { continue }
            func drawing(_ preview: RenderedPreview?, _ name: String) async throws -> Surface.Drawing? {
                guard let preview else { return nil }
                return Surface.Drawing(
                    image: try await place(name, preview), width: preview.pixelWidth / preview.scale,
                    height: preview.pixelHeight / preview.scale, texts: preview.texts)
            }
            let roles = Set((old?.texts ?? []).map(\.role) + (new?.texts ?? []).map(\.role)).sorted()
            entry.surfaces.append(
                Surface(
                    state: state.rawValue, surface: any.surfaceName, old: try await drawing(old, "old"),
                    new: try await drawing(new, "new"),
                    changedRoles: roles.filter { role in
                        (old?.texts ?? []).filter { $0.role == role }.map(\.lines) != (new?.texts ?? []).filter { $0.role == role }.map(\.lines)
                    }))
        }
        let oldCuts = cuts(message.old, olds), newCuts = cuts(message.new, news)
        entry.newlyCut = newCuts.subtracting(oldCuts).sorted()
        entry.noLongerCut = oldCuts.subtracting(newCuts).sorted()
        if message.old.message != message.new.message { entry.changes.append("text") }
        if message.old.variant != message.new.variant { entry.changes.append("variant") }
        if message.old.skipped != message.new.skipped { entry.changes.append("skipped") }
        if !entry.newlyCut.isEmpty { entry.changes.append("newly_cut") }
        if !entry.noLongerCut.isEmpty { entry.changes.append("no_longer_cut") }
        if message.new.hitBudget && !message.old.hitBudget { entry.changes.append("over_budget") }
        if message.old.hitBudget && !message.new.hitBudget { entry.changes.append("within_budget") }
        if !entry.rulesAdded.isEmpty || !entry.rulesRemoved.isEmpty { entry.changes.append("rules") }
        entry.error = problems.isEmpty ? nil : problems.joined(separator: "; ")
        return entry
    }

    /// Where one side shows "…": the text rules' cuts, and each drawn surface's cut texts.
    static func cuts(_ side: MessageComparison.Side, _ previews: [RenderedPreview]) -> Set<String> {
        var cuts = side.textCuts
        for preview in previews {
            for text in preview.texts where text.ellipsized && text.role != "note" {
                cuts.insert("\(preview.platform.rawValue)-\(preview.state.rawValue) \(text.role)")
            }
        }
        return cuts
    }
}

/// A comparison's figures: readers and messages compared, and the changed messages by kind.
package struct ComparisonTotals: Codable, Sendable, Equatable {
    /// Changed messages of one locale, variant and platform.
    package struct Group: Codable, Sendable, Hashable {
        package var locale: String
        package var variant: String
        package var platform: String
        package var messages: Int
    }

    /// Readers composed with both folders.
    package var readers = 0
    /// User ids (`--users`) that name no user.
    package var missingUsers = 0
    /// Messages (a reader's, per platform) either folder composed.
    package var messages = 0
    package var changed = 0
    package var unchanged = 0
    package var changedBy: [Group] = []
    package var variantSwitches = 0
    package var newlyCut = 0
    package var noLongerCut = 0
    /// Messages whose new plan had to give something up for the byte budget (or found no fit) where
    /// the old one did not, and the other way round.
    package var newlyOverBudget = 0
    package var backWithinBudget = 0
    /// Changed messages whose plans' rules differ.
    package var rulesChanged = 0
    /// Messages one folder gave no message for (or that could not be drawn): see each entry's error.
    package var failed = 0
    /// Messages (changed by the templates or not) whose new text differs from what the new folder
    /// gives the reader with default preferences: shaped by the reader's mute, follow or pace, apart
    /// from any template change (docs/004).
    package var byPreferences = 0
    /// Readers the new folder gives no message because of their pace or pause (`not_this_week`,
    /// `paused`) where default preferences would give one.
    package var skippedByPreferences = 0

    package init() {}

    /// Counts an entry in.
    package mutating func add(_ entry: ComparisonEntry) {
        guard let platform = entry.platform else {
            missingUsers += 1
            return
        }
        messages += 1
        changed += 1
        let key = (entry.locale ?? "", entry.variant ?? "none", platform)
        if let index = changedBy.firstIndex(where: { ($0.locale, $0.variant, $0.platform) == key }) {
            changedBy[index].messages += 1
        } else {
            changedBy.append(Group(locale: key.0, variant: key.1, platform: key.2, messages: 1))
            changedBy.sort { ($0.locale, $0.variant, $0.platform) < ($1.locale, $1.variant, $1.platform) }
        }
        let changes = Set(entry.changes)
        if changes.contains("variant") { variantSwitches += 1 }
        if changes.contains("newly_cut") { newlyCut += 1 }
        if changes.contains("no_longer_cut") { noLongerCut += 1 }
        if changes.contains("over_budget") { newlyOverBudget += 1 }
        if changes.contains("within_budget") { backWithinBudget += 1 }
        if changes.contains("rules") { rulesChanged += 1 }
        if entry.error != nil { failed += 1 }
    }

    /// Counts in what a reader's preferences did to their messages (each message of theirs, changed
    /// by the templates or not, and the reader if they skip them).
    package mutating func addPreferences(of reader: ComparedReader, messages: [MessageComparison]) {
        byPreferences += messages.count { $0.byPreferences }
        if reader.skippedByPreferences { skippedByPreferences += 1 }
    }

    /// Counts a message both folders composed alike.
    package mutating func addUnchanged() {
        messages += 1
        unchanged += 1
    }
}
