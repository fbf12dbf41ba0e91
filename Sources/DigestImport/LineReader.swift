#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file line by line through a fixed buffer, so memory stays flat however long the file
/// is, and however long a line: a line over the limit is read past, not held.
package final class LineReader {
    /// One line without its line break (`\n`, or `\r\n`).
    package enum Line {
        case bytes([UInt8])
        /// A line longer than the limit, and how long it was.
        case tooLong(Int)
    }

    private let file: UnsafeMutablePointer<FILE>
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0
    package let path: String
    let maxLineBytes: Int

    package init(path: String, maxLineBytes: Int = ImportLimits.maxLineBytes) throws(ImportError) {
        guard let file = fopen(path, "r") else {
            throw ImportError(file: path, line: nil, reason: "cannot open (\(String(cString: strerror(errno))))")
        }
        self.file = file
        self.path = path
        self.maxLineBytes = maxLineBytes
    }

    deinit {
        fclose(file)
    }

    /// The next line; `nil` at the end of the file.
    package func next() throws(ImportError) -> Line? {
        var line: [UInt8] = []
        var length = 0
        var sawByte = false
        while true {
            if start == end {
                guard try refill() else { break }
            }
            sawByte = true
            let newline = chunk.withUnsafeBytes { buffer -> Int? in
                guard let base = buffer.baseAddress, let found = memchr(base + start, 0x0A, end - start) else { return nil }
                return base.distance(to: UnsafeRawPointer(found))
            }
            let stop = newline ?? end
            // One byte over the limit is kept, for the `\r` of a `\r\n`.
            if length + (stop - start) <= maxLineBytes + 1 {
                line.append(contentsOf: chunk[start..<stop])
            } else if !line.isEmpty {
                line = []
            }
            length += stop - start
            start = stop
            if newline != nil {
                start += 1
                break
            }
        }
        guard sawByte else { return nil }
        if length <= maxLineBytes + 1, line.last == 0x0D {
            line.removeLast()
            length -= 1
        }
        return length > maxLineBytes ? .tooLong(length) : .bytes(line)
    }

    /// Reads the next chunk; `false` at the end of the file.
    private func refill() throws(ImportError) -> Bool {
        let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        start = 0
        end = count
        if count == 0 && ferror(file) != 0 {
            throw ImportError(file: path, line: nil, reason: "cannot read (\(String(cString: strerror(errno))))")
        }
        return count > 0
    }
}
