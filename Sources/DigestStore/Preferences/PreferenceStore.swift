public import DigestCore

/// A reader's preferences as stored, with their version.
public struct StoredPreferences: Sendable, Hashable {
    public var preferences: ReaderPreferences
    /// 1 when preferences were first stored, raised by every change (a write that changes nothing
    /// keeps it); 0 while none were ever stored (the defaults).
    public var version: Int

    public init(preferences: ReaderPreferences, version: Int) {
        self.preferences = preferences
        self.version = version
    }
}

/// Who changed a reader's preferences.
public enum PreferenceSource: String, Sendable, Hashable, CaseIterable, Codable {
    /// A `users.jsonl` line (`preferences` or `optedOut`).
    case `import`
    /// The publisher's backend, through `digest collect`'s preferences API.
    case api
    /// `digest readers set`.
    case cli
    /// A button on the reader's notification (a reported action).
    case action
}

/// One recorded change of a reader's preferences (`digest_preference_changes`).
public struct PreferenceChange: Sendable, Hashable {
    /// When it was stored (Unix seconds).
    public var at: Int64
    public var source: PreferenceSource
    /// The message whose button made the change (source ``PreferenceSource/action``), else `nil`.
    public var messageID: String?
    public var before: ReaderPreferences
    public var after: ReaderPreferences

    public init(at: Int64, source: PreferenceSource, messageID: String?, before: ReaderPreferences, after: ReaderPreferences) {
        self.at = at
        self.source = source
        self.messageID = messageID
        self.before = before
        self.after = after
    }
}

/// What storing a reader's preferences gave.
public enum PreferenceWrite: Sendable, Hashable {
    /// Stored (or already so: the version unchanged and nothing recorded).
    case stored(StoredPreferences)
    /// The store holds no reader with that id.
    case noReader
    /// The stored version is not the one the write was conditional on: nothing stored.
    case versionMoved(current: StoredPreferences)
    /// The preferences come from the publisher's own view (PostgreSQL, docs/005): digest cannot
    /// change them.
    case managedElsewhere
}

/// Reads and changes readers' preferences one reader at a time (the API, `digest readers`, the
/// notification's buttons). The run reads them with the readers (``Reader/preferences``), and the
/// import stores them in bulk through its own sink.
public protocol PreferenceStore: Sendable {
    /// The reader's preferences (defaults and version 0 when none were stored), or `nil` when the
    /// store holds no reader with that id.
    func preferences(of readerID: String) async throws -> StoredPreferences?
    /// Replaces the reader's preferences with `preferences` (``ReaderPreferences/from`` resolved by
    /// ``ReaderPreferences/resolvingFrom(stored:currentWeek:)`` with the ISO week of `at` in UTC), in
    /// one transaction: when `ifVersion` is given and the stored version differs, nothing is stored.
    /// A change raises the version by 1 and is recorded with `source`, `messageID` and `at`; a write
    /// that changes nothing records nothing.
    func setPreferences(
        of readerID: String, to preferences: ReaderPreferences, ifVersion: Int?, source: PreferenceSource, messageID: String?,
        at: Int64
    ) async throws -> PreferenceWrite
    /// The reader's recorded changes, newest first: by `at`, and of changes at the same instant the
    /// one stored later first (so each change's `before` is the next one's `after`); at most `limit`;
    /// `nil` when the store holds no reader with that id.
    func preferenceChanges(of readerID: String, limit: Int) async throws -> [PreferenceChange]?
}
