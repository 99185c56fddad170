package intake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestReadAnswer: the answer is checked whole before anything of it is
// used, members are found in any order, and each problem is named where
// it is, in JSON's words.
func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, body, err string
	}{
		{"result before resultType, status last", `{"data":{"result":[],"resultType":"vector"},"warnings":["w"],"status":"success"}`, ""},
		{"nulls", `{"status":null,"warnings":null,"data":null}`, ""},
		{"trailing data", `{"status":"success"} x`, "line 1, column 22: trailing data after the JSON value"},
		{"syntax after the result", `{"data":{"result":[]},"status":}`, "line 1, column 32: invalid character '}' at start of value"},
		{"a name given twice", `{"status":"success","status":"error"}`, `line 1, column 21: duplicate key "status" (first at line 1, column 2)`},
		{"not an object", `[]`, "line 1, column 1: want an object, got an array"},
		{"warnings of the wrong kind", `{"warnings":[1]}`, "line 1, column 14: warnings[0]: want a string, got the number 1"},
		{"data of the wrong kind", `{"data":"x"}`, `line 1, column 9: data: want an object, got the string "x"`},
		{"empty", ``, "no JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAnswer([]byte(tc.body))
			if got := errText(err); got != tc.err {
				t.Errorf("readAnswer(%s): %q, want %q", tc.body, got, tc.err)
			}
		})
	}
	a, err := readAnswer([]byte(`{"data":{"result":[1, 2],"resultType":"vector"},"warnings":["w1","w\u0032"],"errorType":"e","error":"m","status":"success","more":{"x":[]}}`))
	if err != nil || a.Status != "success" || a.Data.ResultType != "vector" || a.ErrorType != "e" || a.Error != "m" ||
		strings.Join(a.Warnings, ",") != "w1,w2" || string(a.Data.Result) != "[1, 2]" {
		t.Errorf("readAnswer = %+v, %v", a, err)
	}
}

// TestReadVector: the labels that name a machine, compared exactly and
// unescaped; the value; and each problem of a sample, named where it is
// in the whole answer.
func TestReadVector(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"vector","result":[
 {"metric":{"Serial":"no","job":"x","serial":"S\u0031","address":"10.0.0.1","instance":"h:1"},"value":[1, "1.5"]},
 {"histogram":[1,{}],"metric":{}},
 null]}}`
	a, err := readAnswer([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	s, err := readVector([]byte(body), a.Data.Result)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 3 {
		t.Fatalf("%d samples, want 3", len(s))
	}
	l := s[0].Metric
	if l.Serial != "S1" || l.Address != "10.0.0.1" || l.Instance != "h:1" || s[0].Value.v != 1.5 || !s[0].Value.ok {
		t.Errorf("sample 0: %+v", s[0])
	}
	if !strings.HasPrefix(l.String(), `{"Serial":"no"`) || !strings.HasSuffix(l.String(), `"h:1"}`) {
		t.Errorf("labels as written: %s", l)
	}
	if s[1].Value.ok || s[1].Metric.String() != "{}" || s[2].Value.ok || s[2].Metric.Serial != "" {
		t.Errorf("samples without a value: %+v", s[1:])
	}

	for _, tc := range []struct{ sample, err string }{
		{`{"metric":[]}`, "line 1, column 127: data.result[1].metric: want an object of labels, got an array"},
		{`{"metric":{"serial":1}}`, "line 1, column 137: data.result[1].metric.serial: want a string, got the number 1"},
		{`{"value":{}}`, `line 1, column 126: data.result[1].value: want [time, "value"], got an object`},
		{`{"value":[]}`, `line 1, column 126: data.result[1].value: want [time, "value"]`},
		{`{"value":[1]}`, `line 1, column 126: data.result[1].value: want [time, "value"]`},
		{`{"value":[1,2]}`, `line 1, column 129: data.result[1].value[1]: want a string, got the number 2`},
		{`{"value":[1,"x"]}`, `line 1, column 129: data.result[1].value[1]: not a number: "x"`},
		{`{"value":[1,"2",3]}`, `line 1, column 126: data.result[1].value: want [time, "value"]`},
		{`{"value":[1,"` + strings.Repeat("x", 2000) + `"]}`, `line 1, column 129: data.result[1].value[1]: not a number: "` + strings.Repeat("x", 1024) + `…(976 bytes more)"`},
	} {
		body := promResponse([]string{sample(`"serial":"S1"`, "1"), tc.sample})
		a, err := readAnswer([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		_, err = readVector([]byte(body), a.Data.Result)
		if got := errText(err); got != tc.err {
			t.Errorf("sample %s: %q, want %q", tc.sample, got, tc.err)
		}
	}
	if s, err := readVector(nil, []byte("null")); s != nil || err != nil {
		t.Errorf("null: %v, %v", s, err)
	}
	if _, err := readVector([]byte(sample("", "NaN")), []byte(`[`+sample("", "NaN")+`]`)); err != nil {
		t.Errorf("NaN: %v", err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestReadVectorMatchesEncodingJSON: on answers of random samples (label
// names that differ from the machine labels only in case, strings with
// escapes and invalid UTF-8, values of every form, members in any order),
// the reader keeps what encoding/json reads of the same answer.
func TestReadVectorMatchesEncodingJSON(t *testing.T) {
	names := []string{"serial", "address", "instance", "Serial", "job", "séri\u00e9", "a\"b"}
	values := []string{"1", "-2.5", "1e300", "NaN", "+Inf", "-Inf", "0x10", "x"}
	rapid.Check(t, func(t *rapid.T) {
		var samples []string
		for i := range rapid.IntRange(0, 5).Draw(t, "samples") {
			labels := map[string]string{}
			for range rapid.IntRange(0, 4).Draw(t, "labels") {
				labels[rapid.SampledFrom(names).Draw(t, "name")] = rapid.String().Draw(t, "value") + "\xff"[:rapid.IntRange(0, 1).Draw(t, "bad")]
			}
			metric, err := json.Marshal(labels)
			if err != nil {
				t.Fatal(err)
			}
			value := fmt.Sprintf(`[%d, %q]`, i, rapid.SampledFrom(values).Draw(t, "v"))
			if rapid.Bool().Draw(t, "value first") {
				samples = append(samples, fmt.Sprintf(`{"value": %s, "metric": %s}`, value, metric))
			} else {
				samples = append(samples, fmt.Sprintf(`{"metric": %s, "value": %s}`, metric, value))
			}
		}
		body := []byte(promResponse(samples))
		a, err := readAnswer(body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readVector(body, a.Data.Result)
		var want struct {
			Data struct {
				Result []struct {
					Metric json.RawMessage
					Value  [2]json.RawMessage
				}
			}
		}
		if jerr := json.Unmarshal(body, &want); jerr != nil {
			t.Fatal(jerr)
		}
		for i, w := range want.Data.Result {
			var labels map[string]string
			var v string
			if json.Unmarshal(w.Metric, &labels) != nil || json.Unmarshal(w.Value[1], &v) != nil {
				t.Fatalf("sample %d does not decode", i)
			}
			f, ferr := strconv.ParseFloat(v, 64)
			if ferr != nil {
				// The first value that is not a number is the error.
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("data.result[%d].value[1]: not a number", i)) {
					t.Fatalf("value %q: error %v", v, err)
				}
				return
			}
			if err != nil {
				continue // about a later sample
			}
			g := got[i]
			if g.Metric.Serial != labels["serial"] || g.Metric.Address != labels["address"] || g.Metric.Instance != labels["instance"] ||
				g.Metric.String() != string(w.Metric) || !same(g.Value.v, f) || !g.Value.ok {
				t.Fatalf("sample %d: read %+v (%s), encoding/json %q %v", i, g, g.Metric, labels, f)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want.Data.Result) {
			t.Fatalf("%d samples, want %d", len(got), len(want.Data.Result))
		}
	})
}
