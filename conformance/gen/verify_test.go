package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func committedSZ4(t *testing.T) map[string][]byte {
	files := map[string][]byte{}
	for _, name := range []string{"manifest.json", "data.bin"} {
		b, err := os.ReadFile("../corpus/splitzip4/" + name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}

func TestVerifySpecAcceptsCommittedCorpus(t *testing.T) {
	if err := verifySpec("splitzip4", committedSZ4(t)); err != nil {
		t.Fatal(err)
	}
}

func TestVerifySpecRefusesDisagreement(t *testing.T) {
	files := committedSZ4(t)
	var m struct {
		Cases []struct {
			Container struct {
				SHA256 string `json:"sha256"`
			} `json:"container"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil {
		t.Fatal(err)
	}
	h := m.Cases[len(m.Cases)-1].Container.SHA256
	flipped := strings.Repeat("0", 64)
	if h == flipped {
		flipped = strings.Repeat("1", 64)
	}
	files["manifest.json"] = []byte(strings.Replace(string(files["manifest.json"]), h, flipped, 1))
	if err := verifySpec("splitzip4", files); err == nil {
		t.Fatal("a manifest with a wrong container hash passed")
	}
}
