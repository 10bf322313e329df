import http.client, sys, time
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]))
for i in range(int(sys.argv[3])):
    t = time.time(); c.request("GET", "/big.bin"); r = c.getresponse(); b = r.read()
    print("ka req %d: %d bytes %.1f ms" % (i, len(b), (time.time()-t)*1000)); time.sleep(float(sys.argv[4]))
