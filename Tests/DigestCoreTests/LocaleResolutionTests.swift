import Foundation
import Testing

@testable import DigestCore

/// A reader's locale is data from the import (any string without control characters): it resolves
/// along the fallback chain (`pl-PL` → `pl` → `en`) to the locale folders loaded at start, and never
/// becomes a path.
@Suite struct LocaleResolutionTests {
    @Test func anyLocaleResolvesToALoadedFolderAndNeverReachesTheFileSystem() throws {
        let copy = try TemplatesCopy()
        let catalog = try TemplateCatalog(directory: copy.url)
        // Resolution reads nothing from disk: with the folder gone, it still works.
        try FileManager.default.removeItem(at: copy.url)
        let cases: [(String, String)] = [
            ("../../etc/passwd", "en"),
            ("..", "en"), (".", "en"), ("/", "en"), ("/etc", "en"), ("", "en"),
            ("../pl", "en"),
            ("pl/../../ru", "en"),
            ("pl-PL/../../etc/passwd", "pl"),
            ("ru-RU/..", "ru"),
            ("%2e%2e%2fpl", "en"),
            ("C:\\Windows\\win.ini", "en"),
            ("\u{202E}lp", "en"),
            ("pl-PL", "pl"),
            ("PL_pl.UTF-8@euro", "pl"),
            ("zh_CN", "zh-Hans"),
            ("xx-YY", "en"),
        ]
        for (locale, expected) in cases {
            let resolved = catalog.localized(for: locale).resolved
            #expect(resolved == expected, "\(locale)")
            #expect(catalog.locales.contains(resolved), "\(locale) → \(resolved)")
        }
    }
}
