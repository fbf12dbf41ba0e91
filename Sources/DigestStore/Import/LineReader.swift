#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file line by line with a reused buffer, so memory stays flat however long the file is.
final class LineReader {
    private let file: UnsafeMutablePointer<FILE>
    private var buffer: UnsafeMutablePointer<CChar>?
    private var capacity = 0
    let path: String

    init(path: String) throws(ImportError) {
        guard let file = fopen(path, "r") else {
            throw ImportError(file: path, line: nil, reason: "cannot open (\(String(cString: strerror(errno))))")
        }
        self.file = file
        self.path = path
    }

    deinit {
        free(buffer)
        fclose(file)
    }

    /// The next line without its line break, as bytes; `nil` at the end.
    func next() -> [UInt8]? {
        let count = getline(&buffer, &capacity, file)
        guard count >= 0, let buffer else { return nil }
        var length = count
        while length > 0 && (buffer[length - 1] == 0x0A || buffer[length - 1] == 0x0D) { length -= 1 }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }
}
