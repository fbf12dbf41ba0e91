import DigestCore
import DigestStore
import Foundation
import Synchronization
import DigestImport

/// An import sink that keeps nothing but checks every record the importer hands it against what the
/// stores need of it (no control character anywhere, ids, tokens and numbers within their limits,
/// cleaned text already clean, one record per id in a batch) and counts them.
final class CheckingSink: HistoryImportSink {
    private struct State {
        var records = 0
        var violations: [String] = []
    }

    private let state = Mutex(State())

    /// Records written.
    var records: Int { state.withLock { $0.records } }
    /// What broke the rules, one line each.
    var violations: [String] { state.withLock { $0.violations } }

    func write(_ batch: ImportBatch) async throws -> ImportBatchResult {
        var problems: [String] = []
        func check(_ ok: Bool, _ what: @autoclosure () -> String) {
            if !ok { problems.append(what()) }
        }
        func plain(_ text: String) -> Bool {
            !text.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029 }
        }
        func id(_ text: String) -> Bool {
            !text.isEmpty && text.utf8.count <= ImportLimits.maxIDBytes && plain(text)
                && text.precomposedStringWithCanonicalMapping.utf8.elementsEqual(text.utf8)
        }
        func clean(_ text: String) -> Bool {
            TextRules.clean(text).utf8.elementsEqual(text.utf8) && text.precomposedStringWithCanonicalMapping.utf8.elementsEqual(text.utf8)
        }
        let instants = Int64(-62_167_305_600)...Int64(253_402_387_199)
        switch batch {
        case .users(let imported):
            let users = imported.map(\.reader)
            check(Set(users.map(\.id)).count == users.count, "a user id twice in a batch")
            for user in users {
                check(id(user.id), "user id \(user.id.debugDescription)")
                check(plain(user.locale) && user.locale.utf8.count <= ImportLimits.maxNameBytes, "locale \(user.locale.debugDescription)")
                check(plain(user.timeZone) && user.timeZone.utf8.count <= ImportLimits.maxNameBytes, "time zone \(user.timeZone.debugDescription)")
                check(Set(user.devices.map(\.token)).count == user.devices.count, "a token twice")
                for device in user.devices {
                    check(
                        !device.token.isEmpty && device.token.utf8.count <= ImportLimits.maxTokenBytes
                            && device.token.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "token \(device.token.debugDescription)")
                    check(device.registeredAt.map { instants.contains($0) } ?? true, "registeredAt \(device.registeredAt ?? 0)")
                }
            }
        case .articles(let articles):
            check(Set(articles.map(\.id)).count == articles.count, "an article id twice in a batch")
            for article in articles {
                check(id(article.id), "article id \(article.id.debugDescription)")
                check(clean(article.title), "title \(article.title.debugDescription)")
                check(plain(article.url) && (article.url.hasPrefix("https://") || article.url.hasPrefix("http://")), "url \(article.url.debugDescription)")
                check(article.imageURL.map { plain($0) && !$0.isEmpty } ?? true, "image url \(article.imageURL.debugDescription)")
                check(article.topics.count <= ImportLimits.maxTopicsPerArticle, "\(article.topics.count) topics")
                check(Set(article.topics).count == article.topics.count, "a topic twice")
                for topic in article.topics {
                    check(!topic.isEmpty && clean(topic) && topic.utf8.count <= ImportLimits.maxTopicBytes, "topic \(topic.debugDescription)")
                }
                check(instants.contains(article.publishedAt), "publishedAt \(article.publishedAt)")
                check((0...ImportLimits.maxReadingMinutes).contains(article.readingMinutes), "readingMinutes \(article.readingMinutes)")
                check(article.language.map { LanguageTag.isWellFormed($0) && $0.utf8.count <= ImportLimits.maxNameBytes } ?? true, "language")
            }
        case .reads(let reads):
            for read in reads {
                check(id(read.userID) && id(read.articleID), "read ids \(read.userID.debugDescription) \(read.articleID.debugDescription)")
                check(instants.contains(read.readAt), "readAt \(read.readAt)")
                check((0...ImportLimits.maxReadSeconds).contains(read.seconds), "seconds \(read.seconds)")
            }
        }
        state.withLock {
            $0.records += batch.count
            $0.violations += problems
        }
        return ImportBatchResult(written: batch.count)
    }
}
