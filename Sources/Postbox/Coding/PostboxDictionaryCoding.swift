import Foundation

// Dictionaries are stored as two parallel arrays (keys sorted, so equal dictionaries encode to
// equal bytes): `keysKey` holds the keys, `valuesKey` the values.

public extension PostboxEncoder {
    func encode(_ dictionary: [String: String], keysKey: String, valuesKey: String) {
        let keys = dictionary.keys.sorted()
        encode(keys, forKey: keysKey)
        encode(keys.map { dictionary[$0]! }, forKey: valuesKey)
    }

    func encode(_ dictionary: [String: Int64], keysKey: String, valuesKey: String) {
        let keys = dictionary.keys.sorted()
        encode(keys, forKey: keysKey)
        encode(keys.map { dictionary[$0]! }, forKey: valuesKey)
    }
}

public extension PostboxDecoder {
    /// The dictionary written by `encode(_:keysKey:valuesKey:)`; empty when absent.
    func decodeStringDictionary(keysKey: String, valuesKey: String) -> [String: String] {
        Dictionary(zip(decodeStringArray(forKey: keysKey) ?? [], decodeStringArray(forKey: valuesKey) ?? []), uniquingKeysWith: { _, b in b })
    }

    func decodeInt64Dictionary(keysKey: String, valuesKey: String) -> [String: Int64] {
        Dictionary(zip(decodeStringArray(forKey: keysKey) ?? [], decodeInt64Array(forKey: valuesKey) ?? []), uniquingKeysWith: { _, b in b })
    }
}
