import DigestStore

/// The fields of one JSON object of an import line, each read as the kind of value it must hold,
/// with the reason a line is skipped for when it does not. Fields the record does not know are
/// ignored; `null` is the same as an absent field.
struct JSONFields {
    private let fields: [String: JSONValue]
    /// How problems name a field: `""` for the line's own fields, `"devices[1]."` for a device's.
    private let path: String

    /// The line's object.
    init(line value: JSONValue) throws(LineProblem) {
        guard case .object(let fields) = value else {
            throw LineProblem(.notAnObject, "not a JSON object (found \(value.kind))")
        }
        self.fields = fields
        self.path = ""
    }

    /// An object inside the line, at `path` (`devices[1]`).
    init(_ value: JSONValue, at path: String) throws(LineProblem) {
        guard case .object(let fields) = value else {
            throw LineProblem(.wrongType, "'\(path)' must be an object, not \(value.kind)")
        }
        self.fields = fields
        self.path = path + "."
    }

    private func present(_ key: String) -> JSONValue? {
        switch fields[key] {
        case nil, .null?: nil
        case let value?: value
        }
    }

    private func wrongType(_ key: String, _ expected: String, _ found: JSONValue) -> LineProblem {
        LineProblem(.wrongType, "'\(path)\(key)' must be \(expected), not \(found.kind)")
    }

    func string(_ key: String) throws(LineProblem) -> String {
        guard let value = try optionalString(key) else { throw LineProblem(.missingField, "missing field '\(path)\(key)'") }
        return value
    }

    func optionalString(_ key: String) throws(LineProblem) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let string) = value else { throw wrongType(key, "a string", value) }
        return string
    }

    func optionalBool(_ key: String) throws(LineProblem) -> Bool? {
        guard let value = present(key) else { return nil }
        guard case .bool(let bool) = value else { throw wrongType(key, "true or false", value) }
        return bool
    }

    /// A whole number from 0 to `max` (`6`, `6.0` and `6e0` alike).
    func optionalCount(_ key: String, max: Int) throws(LineProblem) -> Int? {
        guard let value = present(key) else { return nil }
        guard case .number(let text) = value else { throw wrongType(key, "a number", value) }
        let shown = text.count > 30 ? String(text.prefix(30)) + "…" : text
        switch JSONValue.integer(text) {
        case .fraction:
            throw LineProblem(.badNumber, "\(path)\(key) \(shown) is not a whole number")
        case .overflow where text.hasPrefix("-"):
            throw LineProblem(.badNumber, "\(path)\(key) \(shown) is negative")
        case .overflow:
            throw LineProblem(.badNumber, "\(path)\(key) \(shown) is over the limit of \(max)")
        case .value(let number):
            guard number >= 0 else { throw LineProblem(.badNumber, "\(path)\(key) \(shown) is negative") }
            guard number <= Int64(max) else { throw LineProblem(.badNumber, "\(path)\(key) \(shown) is over the limit of \(max)") }
            return Int(number)
        }
    }

    /// The object at `key`, whose own fields' problems are named under it (`devices[0].subscription.keys`).
    func object(_ key: String) throws(LineProblem) -> JSONFields {
        guard let value = present(key) else { throw LineProblem(.missingField, "missing field '\(path)\(key)'") }
        return try JSONFields(value, at: path + key)
    }

    /// The value at `key` whatever its kind, `nil` when absent or `null`.
    func optionalValue(_ key: String) -> JSONValue? {
        present(key)
    }

    func optionalArray(_ key: String) throws(LineProblem) -> [JSONValue]? {
        guard let value = present(key) else { return nil }
        guard case .array(let elements) = value else { throw wrongType(key, "a list", value) }
        return elements
    }

    /// An instant in RFC 3339 (``Timestamp/parse(_:)``), as Unix seconds.
    func optionalInstant(_ key: String) throws(LineProblem) -> Int64? {
        guard let text = try optionalString(key) else { return nil }
        guard let instant = Timestamp.parse(text) else {
            throw LineProblem(
                .badDate, "\(path)\(key) \(ImportFieldRules.quote(text)) is not an RFC 3339 instant that exists (like 2026-11-17T19:22:05Z)")
        }
        return instant
    }

    func instant(_ key: String) throws(LineProblem) -> Int64 {
        guard let instant = try optionalInstant(key) else { throw LineProblem(.missingField, "missing field '\(path)\(key)'") }
        return instant
    }
}
