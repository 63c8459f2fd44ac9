package mbox

import (
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	const sep = "From mboxrd@z Thu Jan  1 00:00:00 1970\n"
	for _, tc := range []struct {
		name, in string
		mails    int
		from     string // the first mail's
		subject  string
		text     string // the first mail's text must hold it
		attach   string // its attachments' types, joined by ","
		err      string
	}{
		{name: "folded subject, quoted name", in: sep + "From: \"Doe, John\" <j@x.org>\nSubject: [PATCH 1/2] a\n very long subject\n\nbody\n",
			mails: 1, from: `"Doe, John" <j@x.org>`, subject: "[PATCH 1/2] a very long subject", text: "body"},
		{name: "RFC 2047 name", in: sep + "From: =?UTF-8?q?J=C3=B6rg?= <j@x.org>\nSubject: x\n\nbody\n",
			mails: 1, from: "Jörg <j@x.org>", subject: "x", text: "body"},
		{name: "a From line in a body does not split a mail", in: sep + "From: a <a@x>\nSubject: x\n\nFrom here on it is fast.\n" + sep + "From: a <a@x>\nSubject: y\n\nb\n",
			mails: 2, from: "a <a@x>", subject: "x", text: "From here on"},
		{name: "git's mbox is not unescaped", in: "From 0123456789012345678901234567890123456789 Mon Sep 17 00:00:00 2001\nFrom: a <a@x>\nSubject: x\n\nx\n>From a quote\n",
			mails: 1, from: "a <a@x>", subject: "x", text: "x\n>From a quote"},
		{name: "mboxo is unescaped", in: "From a@x Mon Dec  2 10:00:00 2026\nFrom: a <a@x>\nSubject: x\n\nx\n>From a quote\n",
			mails: 1, from: "a <a@x>", subject: "x", text: "x\nFrom a quote"},
		{name: "alternative keeps the plain text", in: sep + "From: a <a@x>\nSubject: x\nContent-Type: multipart/alternative; boundary=B\n\n--B\nContent-Type: text/plain\n\nplain\n--B\nContent-Type: text/html\n\n<p>html</p>\n--B--\n",
			mails: 1, from: "a <a@x>", subject: "x", text: "plain"},
		{name: "signed drops the signature", in: sep + "From: a <a@x>\nSubject: x\nContent-Type: multipart/signed; boundary=S; protocol=\"application/pgp-signature\"\n\n--S\nContent-Type: text/plain\n\nsigned\n--S\nContent-Type: application/pgp-signature\n\n-----BEGIN PGP SIGNATURE-----\n--S--\n",
			mails: 1, from: "a <a@x>", subject: "x", text: "signed"},
		{name: "nested mixed keeps attachments", in: sep + "From: a <a@x>\nSubject: x\nContent-Type: multipart/mixed; boundary=M\n\n--M\nContent-Type: multipart/alternative; boundary=A\n\n--A\nContent-Type: text/plain\n\nmsg\n--A--\n--M\nContent-Type: text/x-patch; name=p.patch\n\n--- a/x\n+++ b/x\n--M--\n",
			mails: 1, from: "a <a@x>", subject: "x", text: "msg", attach: "text/x-patch"},
		{name: "CRLF", in: strings.ReplaceAll(sep+"From: a <a@x>\nSubject: x\n\nline\n", "\n", "\r\n"),
			mails: 1, from: "a <a@x>", subject: "x", text: "line\n"},
		{name: "not UTF-8", in: sep + "From: a <a@x>\nSubject: x\nContent-Type: text/plain; charset=koi8-r\n\n\xd0\xd2\xc9\n", err: `mail 1 "x": body is not UTF-8 (charset koi8-r)`},
		{name: "multipart without boundary", in: sep + "From: a <a@x>\nSubject: x\nContent-Type: multipart/mixed\n\nx\n", err: `mail 1 "x": multipart/mixed without a boundary`},
		{name: "bad base64", in: sep + "From: a <a@x>\nSubject: x\nContent-Transfer-Encoding: base64\n\n!!!!\n", err: `mail 1 "x": base64 body`},
		{name: "no headers", in: sep + "just text\n", err: "mail 1: mail headers"},
		{name: "text before the first mail", in: "hello\n" + sep + "From: a <a@x>\nSubject: x\n\nb\n", err: "not an mbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := Read([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, a := range ms[0].Attachments {
				types = append(types, a.Type)
			}
			m := ms[0]
			if len(ms) != tc.mails || m.From != tc.from || m.Subject != tc.subject || !strings.Contains(m.Text, tc.text) || strings.Join(types, ",") != tc.attach {
				t.Errorf("%d mails; from %q, subject %q, text %q, attachments %q", len(ms), m.From, m.Subject, m.Text, types)
			}
			if strings.Contains(m.Text, "\r") {
				t.Errorf("text %q keeps a CR", m.Text)
			}
			if !strings.HasPrefix(tc.in, string(m.Raw)) || m.Index != 1 {
				t.Errorf("mail 1: index %d, raw %q is not the input's start", m.Index, m.Raw)
			}
		})
	}
}
