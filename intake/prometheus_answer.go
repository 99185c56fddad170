package intake

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckegen/ckegen/internal/clip"
	"github.com/ckegen/ckegen/internal/strictjson"
)

// promAnswer is what ckegen reads of an answer of the HTTP API; other
// members are skipped.
type promAnswer struct {
	Status    string   `json:"status"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Data      struct {
		ResultType string `json:"resultType"`
		// Result is kept as written, for readVector.
		Result jsontext.Value `json:"result"`
	} `json:"data"`
}

// readAnswer checks body whole, exactly one JSON value without a name
// given twice, and reads its envelope, names matched exactly; data.result
// is checked but not read. An error is a *strictjson.Error: where, and in
// JSON's words.
func readAnswer(body []byte) (promAnswer, error) {
	var a promAnswer
	err := strictjson.UnmarshalIgnoringUnknown(body, &a)
	return a, err
}

// Paths of the result and of a sample's members, for errors.
var (
	pathResult = strictjson.Path{}.Key("data").Key("result")
	pathMetric = strictjson.Path{}.Key("metric")
	pathValue  = strictjson.Path{}.Key("value")
)

// answerReader reads JSON from src, which the decoder reads in place (a
// bytes.Buffer): the text it returns may point into src.
type answerReader struct {
	dec *jsontext.Decoder
	src []byte
}

// object reads an object at p (null reads as an empty one), calling member
// with each name, before its value, which member must read.
func (r answerReader) object(p strictjson.Path, member func(name []byte) error) error {
	switch r.dec.PeekKind() {
	case 'n':
		return r.dec.SkipValue()
	case '{':
	default:
		return r.wrongKind(p, "an object")
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	for r.dec.PeekKind() == '"' {
		name, err := r.text()
		if err != nil {
			return err
		}
		if err := member(name); err != nil {
			return err
		}
	}
	_, err := r.dec.ReadToken()
	return err
}

// text reads the string next (a value or an object's name), unquoted;
// without escapes, it points into src.
func (r answerReader) text() ([]byte, error) {
	v, err := r.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1], nil
	}
	out, _ := jsontext.AppendUnquote(nil, v) // invalid UTF-8 as U+FFFD
	return out, nil
}

// wrongKind is the error of the value next, at p, that is not what is
// wanted there, for strictjson.Place.
func (r answerReader) wrongKind(p strictjson.Path, want string) error {
	v, err := r.dec.ReadValue()
	if err != nil {
		return err
	}
	return strictjson.WrongKind(p, want, v)
}

// readVector reads the samples of an instant vector, data.result of body
// (an answer readAnswer has checked whole):
// [{"metric": {LABELS}, "value": [TIME, "VALUE"]}, ...]; null reads as no
// samples.
func readVector(body, result []byte) ([]vectorSample, error) {
	// Invalid UTF-8 in a string reads as U+FFFD, as strictjson reads it.
	r := answerReader{dec: jsontext.NewDecoder(bytes.NewBuffer(result), jsontext.AllowInvalidUTF8(true)), src: result}
	switch r.dec.PeekKind() {
	case 'n':
		return nil, nil
	case '[':
	default:
		return nil, strictjson.Place(r.wrongKind(pathResult, "an array of objects"), body)
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, err // not after readAnswer's check
	}
	var samples []vectorSample
	for i := 0; r.dec.PeekKind() != ']'; i++ {
		samples = append(samples, vectorSample{})
		if err := r.sample(&samples[i]); err != nil {
			return nil, strictjson.Place(strictjson.Within(err, pathResult.Index(i)), body)
		}
	}
	return samples, nil
}

// sample reads one sample; null reads as a sample without labels or
// value, which no machine has. Its errors' paths start at the sample.
func (r answerReader) sample(s *vectorSample) error {
	return r.object(nil, func(name []byte) error {
		switch string(name) {
		case "metric":
			return r.labels(pathMetric, &s.Metric)
		case "value":
			return r.value(pathValue, &s.Value)
		}
		return r.dec.SkipValue()
	})
}

// labels reads a label set at p, keeping the labels that name a machine
// (names compared exactly: "Serial" is not "serial").
func (r answerReader) labels(p strictjson.Path, l *sampleLabels) error {
	if r.dec.PeekKind() != '{' {
		return r.wrongKind(p, "an object of labels")
	}
	start := int(r.dec.InputOffset())
	err := r.object(p, func(name []byte) error {
		var dst *string
		switch string(name) {
		case promLabelSerial:
			dst = &l.Serial
		case promLabelAddress:
			dst = &l.Address
		case promLabelInstance:
			dst = &l.Instance
		}
		if r.dec.PeekKind() != '"' {
			return r.wrongKind(p.Key(string(name)), "a string")
		}
		v, err := r.text()
		if dst != nil {
			*dst = string(v)
		}
		return err
	})
	// The labels as written: after the name's colon, up to the '}'.
	l.text = bytes.TrimLeft(r.src[start:r.dec.InputOffset()], " \t\r\n:")
	return err
}

// value reads [TIME, "VALUE"] at p.
func (r answerReader) value(p strictjson.Path, sv *sampleValue) error {
	if r.dec.PeekKind() != '[' {
		return r.wrongKind(p, `[time, "value"]`)
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	if r.dec.PeekKind() == ']' {
		return strictjson.Invalidf(p, `want [time, "value"]`)
	}
	if err := r.dec.SkipValue(); err != nil {
		return err
	}
	switch r.dec.PeekKind() {
	case ']':
		return strictjson.Invalidf(p, `want [time, "value"]`)
	case '"':
	default:
		return r.wrongKind(p.Index(1), "a string")
	}
	raw, err := r.text()
	if err != nil {
		return err
	}
	// Prometheus writes values as Go does: 27, 1.5e+10, NaN, +Inf, -Inf.
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return strictjson.Invalidf(p.Index(1), "not a number: %q", clip.Value(string(raw)))
	}
	if r.dec.PeekKind() != ']' {
		return strictjson.Invalidf(p, `want [time, "value"]`)
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	sv.v, sv.ok = v, true
	return nil
}
