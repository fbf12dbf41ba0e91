import DigestCore
@testable import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

/// A reader's data on SQLite: the conformance suite every store runs, and what is SQLite's own
/// (every table with a reader column handled, no byte of a forgotten reader left in the files,
/// why every connection runs with `secure_delete` on, an export's memory, the checkpoint's wait).
@Suite struct SQLiteReaderDataTests {
    @Test(arguments: ReaderDataConformanceTests.Case.allCases)
    func conformance(_ testCase: ReaderDataConformanceTests.Case) async throws {
        try await ReaderDataConformanceTests.run(testCase, on: .sqlite)
    }
}
