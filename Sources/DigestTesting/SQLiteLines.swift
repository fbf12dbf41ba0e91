package import DigestSQLite

extension SQLiteConnection {
    /// Runs `statement` and returns its rows as `a|b` lines, NULL as empty (the shape of `psql -At`,
    /// so a test compares both stores' answers alike).
    package func lines(_ statement: String) throws -> String {
        let prepared = try self.statement(statement)
        defer { prepared.reset() }
        var lines: [String] = []
        while try prepared.step() {
            lines.append((0..<prepared.columnCount).map { prepared.isNull($0) ? "" : prepared.string($0) }.joined(separator: "|"))
        }
        return lines.joined(separator: "\n")
    }
}
