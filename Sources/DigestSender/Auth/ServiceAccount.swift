import Foundation

/// A Google service-account key file (the JSON downloaded from the Cloud console).
///
/// Only the fields the sender needs are read; the private key never appears in descriptions.
public struct ServiceAccount: Sendable, Decodable {
    public var type: String
    public var projectID: String
    public var privateKeyID: String
    /// PEM, PKCS#8 (`-----BEGIN PRIVATE KEY-----`) as Google issues it, or PKCS#1.
    public var privateKey: String
    public var clientEmail: String
    /// Where the signed JWT is exchanged for an access token.
    public var tokenURI: String

    enum CodingKeys: String, CodingKey {
        case type
        case projectID = "project_id"
        case privateKeyID = "private_key_id"
        case privateKey = "private_key"
        case clientEmail = "client_email"
        case tokenURI = "token_uri"
    }

    public init(type: String = "service_account", projectID: String, privateKeyID: String, privateKey: String,
                clientEmail: String, tokenURI: String) {
        self.type = type
        self.projectID = projectID
        self.privateKeyID = privateKeyID
        self.privateKey = privateKey
        self.clientEmail = clientEmail
        self.tokenURI = tokenURI
    }

    /// Reads and checks a service-account file.
    public init(contentsOf path: String) throws(SenderError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw SenderError(.credentials, "cannot read the service-account file: \(error.localizedDescription)", context: path)
        }
        do {
            self = try JSONDecoder().decode(ServiceAccount.self, from: data)
        } catch DecodingError.keyNotFound(let key, _) {
            throw SenderError(.credentials, "the service-account file has no \"\(key.stringValue)\"", context: path)
        } catch {
            throw SenderError(.credentials, "the service-account file is not a service-account JSON key", context: path)
        }
        guard type == "service_account" else {
            throw SenderError(.credentials, "the credentials file is of type \"\(type)\", not \"service_account\"", context: path)
        }
        guard let url = URL(string: tokenURI), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw SenderError(.credentials, "token_uri is not an http(s) URL", context: path)
        }
        _ = try JWTSigner(account: self)  // the key must parse now, not at the first refresh
    }
}
