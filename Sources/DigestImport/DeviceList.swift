package import DigestCore

/// A file that names devices (`digest send-test --test-devices`, `serve --test-devices`): a JSON
/// array of objects, each a `name` beside the fields of a device as `users.jsonl` gives them —
/// `provider`, `platform`, `token`, `topic`, or a Web Push `subscription` — read and checked as the
/// import reads a user's device (``ImportRecords/device(_:_:)``): the same tokens, endpoints, keys
/// and topics are refused, for the same reasons.
package enum DeviceList {
    /// One named device.
    package struct Entry: Sendable {
        package let name: String
        package let device: Device
    }

    /// The longest name, in UTF-8 bytes.
    static let maxNameBytes = 100

    /// The entries of a file's `bytes`, in order; throws a problem naming the entry (`[2]`) and the
    /// field for the first one that is not a device, or for a name empty, too long, holding a
    /// control character, or given twice.
    package static func entries(_ bytes: [UInt8]) throws(LineProblem) -> [Entry] {
        guard case .array(let elements) = try JSONLineParser.parse(bytes) else {
            throw LineProblem(.notAnObject, "not a JSON array of devices")
        }
        var entries: [Entry] = []
        var names = Set<String>()
        for (index, element) in elements.enumerated() {
            let path = "[\(index)]"
            let fields = try JSONFields(element, at: path)
            let name = try fields.string("name")
            guard !name.isEmpty, name.utf8.count <= maxNameBytes else {
                throw LineProblem(.badID, "\(path): a name of 1 to \(maxNameBytes) bytes")
            }
            if let control = ImportFieldRules.firstControl(in: name) {
                throw LineProblem(.badID, "\(path): the name holds a control character (\(ImportFieldRules.name(of: control)))")
            }
            guard names.insert(name).inserted else {
                throw LineProblem(.duplicateID, "\(path): the name \(ImportFieldRules.quote(name)) is given twice")
            }
            entries.append(Entry(name: name, device: try ImportRecords.device(fields, "\(path) \(ImportFieldRules.quote(name))")))
        }
        return entries
    }
}
