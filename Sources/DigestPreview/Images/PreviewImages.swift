import Foundation

/// Where the previews find pictures. Previews never download: a URL under the attachments base URL
/// is read from the attachments directory (where the image pipeline writes its renditions), and a
/// `file://` URL from disk when allowed. Anything else is drawn as "image not readable".
package struct PreviewImages: Sendable, Hashable {
    /// The directory holding rendition files (`<hash>.<ext>`).
    package var attachmentsDirectory: String?
    /// The public base URL those files are served under (the run's `--attachments-url`).
    package var attachmentsURL: String?
    /// Whether `file://` URLs are read (the command line: yes; the server: no).
    package var allowFileURLs: Bool

    package init(attachmentsDirectory: String? = nil, attachmentsURL: String? = nil, allowFileURLs: Bool = false) {
        self.attachmentsDirectory = attachmentsDirectory
        self.attachmentsURL = attachmentsURL
        self.allowFileURLs = allowFileURLs
    }

    /// The local file for `url`, or why there is none.
    func localPath(for url: String) -> Result<String, ImageProblem> {
        if let base = attachmentsURL, let directory = attachmentsDirectory {
            let prefix = base.hasSuffix("/") ? base : base + "/"
            if url.hasPrefix(prefix) {
                let relative = String(url.dropFirst(prefix.count))
                let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
                guard !relative.isEmpty, !parts.contains(where: { $0 == ".." || $0 == "." || $0.isEmpty }),
                    !relative.contains("?"), !relative.contains("%")
                else { return .failure(ImageProblem("not a plain file name under the attachments URL")) }
                return .success(URL(fileURLWithPath: directory).appendingPathComponent(relative).path)
            }
        }
        if url.hasPrefix("file://") {
            guard allowFileURLs else { return .failure(ImageProblem("file URLs are not read here")) }
            guard let path = URL(string: url)?.path, !path.isEmpty else { return .failure(ImageProblem("bad file URL")) }
            return .success(path)
        }
        if attachmentsURL == nil || attachmentsDirectory == nil {
            return .failure(ImageProblem("no --attachments/--attachments-url given; previews do not download"))
        }
        return .failure(ImageProblem("not under the attachments URL; previews do not download"))
    }
}
