// Package recordjson encodes and decodes an operation's stored record
// without reflection. Profiles of a daemon's steps showed encoding/json's
// reflection on pollwarden.Operation at every claim, save and due listing;
// this package writes and reads the same bytes by hand.
//
// The bytes are the contract: AppendOperation gives exactly what
// json.Marshal gives for every value (stored records never change shape,
// so old databases stay readable and new ones read by old binaries), and
// DecodeOperation gives exactly what json.Unmarshal gives. The decoder
// handles the form the encoder writes and hands anything else (unknown or
// differently cased keys, nulls, duplicates, odd numbers, invalid text) to
// json.Unmarshal, so that rare input keeps the reference's answer instead
// of a second implementation's. The property tests hold both to
// encoding/json.
package recordjson
