package import DigestCore

/// Collapsed (as the notification first appears) or expanded (pulled down, long-pressed, or
/// Chrome's expanded card).
package enum PreviewState: String, Sendable, Hashable, Codable, CaseIterable {
    case collapsed
    case expanded
}

/// How many lines of title and body a surface shows, and any character cut the platform makes first.
package struct TextLimits: Sendable, Hashable, Codable {
    /// Visible title lines; the last one ends in "…" when the title is longer.
    package var titleLines: Int
    /// Visible body lines.
    package var bodyLines: Int
    /// The platform cuts the title to this many characters before laying it out (Chrome: 180).
    package var titleCharacters: Int?
    /// The platform cuts the body first (Chrome: 600; Android: 1024 UTF-16 units, see ``bodyUTF16``).
    package var bodyCharacters: Int?
    /// Android 11+ cuts notification text to 1024 UTF-16 units.
    package var bodyUTF16: Int?
    /// Newlines become spaces (Android's single-line text view).
    package var singleLineBody: Bool
    /// Where the numbers come from (docs/007-rules-and-limits.md, "What devices show").
    package var source: String
}

/// The one table of line limits per surface, style and state (docs/007-rules-and-limits.md, "What
/// devices show"). Numbers marked unconfirmed there are defaults here too.
package enum LineLimits {
    struct Key: Hashable {
        var platform: Platform
        var style: AndroidStyle
        var state: PreviewState
    }

    /// Android 11+ caps notification text at 1024 UTF-16 units (AOSP MAX_CHARSEQUENCE_LENGTH).
    static let androidUTF16 = 1024

    static let table: [Key: TextLimits] = {
        let collapsedAndroid = TextLimits(
            titleLines: 1, bodyLines: 1, bodyUTF16: androidUTF16, singleLineBody: true,
            source: "Android collapsed: title 1 line, text 1 line, ellipsized")
        // Expanded BigText is bounded by the 294dp expanded height: about 9 lines at 14sp (unconfirmed).
        let tallAndroid = TextLimits(
            titleLines: 1, bodyLines: 9, bodyUTF16: androidUTF16, singleLineBody: false,
            source: "Android expanded BigText: bounded by 294dp, about 9 lines at 14sp (unconfirmed)")
        return [
            Key(platform: .android, style: .standard, state: .collapsed): collapsedAndroid,
            Key(platform: .android, style: .bigText, state: .collapsed): collapsedAndroid,
            Key(platform: .android, style: .bigPicture, state: .collapsed): collapsedAndroid,
            Key(platform: .android, style: .bigText, state: .expanded): tallAndroid,
            // The app shows Default text through the same expanded template (unconfirmed).
            Key(platform: .android, style: .standard, state: .expanded): tallAndroid,
            Key(platform: .android, style: .bigPicture, state: .expanded): TextLimits(
                titleLines: 1, bodyLines: 1, bodyUTF16: androidUTF16, singleLineBody: true,
                source: "Android BigPicture: content text 1 line, picture below when expanded"),
            Key(platform: .ios, style: .standard, state: .collapsed): iosCollapsed,
            Key(platform: .ios, style: .bigPicture, state: .collapsed): iosCollapsed,
            Key(platform: .ios, style: .standard, state: .expanded): iosExpanded,
            Key(platform: .ios, style: .bigPicture, state: .expanded): iosExpanded,
            Key(platform: .web, style: .standard, state: .collapsed): webCollapsed,
            Key(platform: .web, style: .bigPicture, state: .collapsed): webCollapsed,
            Key(platform: .web, style: .standard, state: .expanded): webExpanded,
            Key(platform: .web, style: .bigPicture, state: .expanded): webExpanded,
        ]
    }()

    static let iosCollapsed = TextLimits(
        titleLines: 1, bodyLines: 4, singleLineBody: false,
        source: "iOS lock screen: title 1 line, body about 4 lines (unconfirmed)")
    /// "Full body" on a long press; the preview stops at 40 lines so a runaway body stays viewable.
    static let iosExpanded = TextLimits(
        titleLines: 3, bodyLines: 40, singleLineBody: false,
        source: "iOS expanded: full body and the attachment at its aspect (preview stops at 40 lines)")
    static let webCollapsed = TextLimits(
        titleLines: 2, bodyLines: 1, titleCharacters: 180, bodyCharacters: 600, singleLineBody: true,
        source: "Chrome: title 2 lines (cut at 180 chars), body 1 line collapsed")
    static let webExpanded = TextLimits(
        titleLines: 2, bodyLines: 4, titleCharacters: 180, bodyCharacters: 600, singleLineBody: false,
        source: "Chrome: title 2 lines (cut at 180 chars), body 4 lines expanded (cut at 600 chars)")

    /// The limits of one surface; iOS and web ignore Android's styles except "has a picture".
    package static func limits(platform: Platform, style: AndroidStyle, state: PreviewState) -> TextLimits {
        let key = platform == .android
            ? Key(platform: platform, style: style, state: state)
            : Key(platform: platform, style: style == .bigPicture ? .bigPicture : .standard, state: state)
        return table[key]!
    }
}
