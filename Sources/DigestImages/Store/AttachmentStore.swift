import Crypto
package import DigestCore
package import DigestImageCodecs
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
package import Foundation

/// The directory of rendition files and the public URL it is served under.
///
/// Files are named `<hash>.<ext>`: the hash covers the source bytes and the rendition (name, size,
/// quality, limit), the extension comes from the file's MIME type. A file is written to a temporary
/// name in the same directory and renamed, so a reader never sees half a file and two writers of
/// the same name cannot interleave. Names are content-derived: a file already present is the same
/// file and is reused.
package struct AttachmentStore: Sendable {
    package let directory: URL
    /// Public base URL, without a trailing slash.
    package let baseURL: String

    package init(directory: URL, baseURL: String) throws(ImageError) {
        self.directory = directory
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ImageError(.storeFailed, "cannot create the attachments directory: \(error)", context: ["directory": directory.path])
        }
    }

    /// The hex SHA-256 of a source.
    package static func sourceHash(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).hexString
    }

    /// The file name stem of `spec` made from the source with hash `sourceHash`.
    package static func stem(sourceHash: String, spec: RenditionSpec) -> String {
        String(SHA256.hash(data: Array("\(sourceHash):\(spec.identity)".utf8)).hexString.prefix(32))
    }

    /// An existing file for `stem`: its name and size.
    package func existing(stem: String) -> (name: String, bytes: Int)? {
        for ext in ["jpg", "png", "gif"] {
            let name = "\(stem).\(ext)"
            if let bytes = size(of: name) { return (name, bytes) }
        }
        return nil
    }

    /// The size of file `name` in the directory, or nil when it is missing, empty or not a regular file.
    package func size(of name: String) -> Int? {
        var info = stat()
        guard stat(directory.appendingPathComponent(name).path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size > 0 else {
            return nil
        }
        return Int(info.st_size)
    }

    /// Writes `data` as `<stem>.<ext of mimeType>` (temporary name, then rename); returns the name.
    @discardableResult
    package func write(_ data: [UInt8], stem: String, mimeType: String) throws(ImageError) -> String {
        let name = "\(stem).\(fileExtension(forMIMEType: mimeType))"
        try Self.write(data, named: name, in: directory)
        return name
    }

    /// Writes `data` as `directory/name`: to a temporary name in the same directory (`.<name>.<pid>.<random>.tmp`),
    /// then renamed, so a reader in any process sees the old file or the whole new one.
    static func write(_ data: [UInt8], named name: String, in directory: URL) throws(ImageError) {
        let final = directory.appendingPathComponent(name).path
        let temporary = directory.appendingPathComponent(".\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw storeError("cannot create", temporary) }
        var written = 0
        let ok = data.withUnsafeBytes { raw -> Bool in
            while written < raw.count {
                let n = systemWrite(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                written += n
            }
            return true
        }
        close(fd)
        guard ok, rename(temporary, final) == 0 else {
            let error = storeError("cannot write", final)
            unlink(temporary)
            throw error
        }
    }

    /// The public URL of file `name`.
    package func url(of name: String) -> String { "\(baseURL)/\(name)" }

    /// Sets the modification time of the files of `renditions` in this store to now: a file reused for
    /// new messages counts as new, so a sweep (``AttachmentSweep``, which spares recent files) cannot
    /// delete it before the messages that link to it are in the outbox. A file that is gone is left so.
    package func markUsed(_ renditions: ImageRenditions) {
        let prefix = url(of: "")
        for rendition in [renditions.hero] + (renditions.icon.map { [$0] } ?? []) where rendition.url.hasPrefix(prefix) {
            _ = utimes(directory.appendingPathComponent(String(rendition.url.dropFirst(prefix.count))).path, nil)
        }
    }

    private static func storeError(_ doing: String, _ path: String) -> ImageError {
        ImageError(.storeFailed, "\(doing) \(path): \(String(cString: strerror(errno)))", context: ["path": path, "errno": "\(errno)"])
    }
}

private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(fd, buffer, count)
    #else
    Darwin.write(fd, buffer, count)
    #endif
}

extension Digest {
    var hexString: String {
        var out = ""
        out.reserveCapacity(Self.byteCount * 2)
        for byte in self {
            out.append(Character(Unicode.Scalar(UInt8(ascii: "0") + (byte >> 4) + (byte >> 4 > 9 ? 39 : 0))))
            out.append(Character(Unicode.Scalar(UInt8(ascii: "0") + (byte & 15) + (byte & 15 > 9 ? 39 : 0))))
        }
        return out
    }
}
