import DigestImageCodecs

#if canImport(Glibc)
import Glibc
#endif

// libFuzzer entry: every input goes through sniffing, header checks, decoding, resampling and
// encoding into two small renditions. Errors are expected; crashes, leaks and hangs are not.
//
//   swift build -c release --product DigestImagesFuzz --build-path .build-fuzz \
//     -Xswiftc -sanitize=fuzzer,address -Xswiftc -DDIGEST_FUZZ -Xcc -fsanitize=fuzzer-no-link,address
//   .build-fuzz/release/DigestImagesFuzz -max_total_time=600 -rss_limit_mb=2048 \
//     Tests/DigestImageCodecsTests/Corpus/fuzz-work Tests/DigestImageCodecsTests/Corpus/fuzz
//
// Without -DDIGEST_FUZZ the program replays the files named on its command line (a regression run).

private let maker: RenditionMaker = {
    var configuration = RenditionMaker.Configuration()
    configuration.maxPixels = 4_000_000  // keep each input fast; the limit itself is what is tested
    configuration.maxDecoderMemory = 64 << 20
    return RenditionMaker(configuration: configuration)
}()

private let specs = [
    RenditionSpec(name: "hero", width: 64, height: 32, maxBytes: 1_000_000, passesGIFThrough: true),
    RenditionSpec(name: "icon", width: 16, height: 16, maxBytes: 1_000_000),
]

@_cdecl("LLVMFuzzerTestOneInput")
package func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    _ = try? maker.render(bytes, specs: specs)
    return 0
}

#if DIGEST_FUZZ
// SwiftPM links executables with `main` defined as `<target>_main`, so libFuzzer's own `main` is
// never pulled in: start its driver from here.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("DigestImagesFuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzOne(data, size) }
}
#else
@main
struct Replay {
    static func main() {
        var count = 0
        for path in CommandLine.arguments.dropFirst() {
            guard let file = fopen(path, "rb") else { continue }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&chunk, 1, chunk.count, file)
                if n <= 0 { break }
                bytes += chunk[0..<n]
            }
            fclose(file)
            _ = bytes.withUnsafeBufferPointer { fuzzOne($0.baseAddress, $0.count) }
            count += 1
        }
        print("replayed \(count) inputs")
    }
}
#endif
