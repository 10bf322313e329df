# 终端报告、HTML 报告和 `demo` 的标题与标签（简体中文）。
# 与 ui.en.ftl 的消息 id 必须一一对应（否则测试失败）。参数已格式化（"43.8 ms"、"45,123"），
# 只有用来选择复数形式的计数（$n）是数字。

## JSON 枚举值的显示文字：word-<JSON 值>（结论、严重程度、一方、层、检查状态）

word-problem = 有问题
word-healthy = 健康
word-inconclusive = 无法判断
word-critical = 严重
word-warning = 警告
word-info = 提示
word-server = 服务端
word-client = 客户端
word-network = 网络
word-host = 主机
word-link = 链路层
word-transport = 传输层
word-application = 应用层
word-dns = DNS
word-ok = 正常
word-skipped = 已跳过
word-failed = 失败

## 终端报告

term-interrupted = 已中断：运行被提前停止；本报告只包含停止前测到的内容
term-consequence-of = 由 { $root } 引起（见上）
term-root-cause-of = 是以下问题的根因：{ $ids }（见下）
html-consequence-of = 由 { $root } 引起（见上）。
html-root-cause-of = 是以下问题的根因：{ $ids }（见下）。
term-passive = 被动模式：只观察了目标的真实流量，没有发送探测或负载
term-connect = connect()
term-connect-line = 中位数 { $median }（最小 { $min }，最大 { $max }；{ $sent } 次中 { $answered } 次完成）
term-connect-some = { $sent } 次 connect() 调用中 { $answered } 次完成
term-measured = 测量结果
term-syn-rtt = SYN RTT
term-syn-raw = 原始 SYN，内核时间戳
term-syn-connect = connect() 计时
term-syn-line = 中位数 { $median }（最小 { $min }，最大 { $max }；{ $sent } 个中 { $answered } 个有应答，{ $how }）
term-syn-refused = 被拒绝：{ $sent } 个 SYN 中有 { $refused } 个收到 RST（没有程序在监听）
term-syn-none = { $sent } 个 SYN 都没有应答（{ $how }）
term-one-request = 单个请求
term-tls = TLS { $tls }
term-one-request-line = 建连 { $connect }{ $tls } · 首字节 { $first } · 总计 { $total }（HTTP { $status }，{ $bytes } 字节；3 次取中位数）
term-under-load = 负载下
term-load-line = { $connections } 个连接，{ $duration } s：{ $requests } 个请求，{ $rps } 请求/秒，错误 { $errors }
term-p-line = p50 { $p50 } · p90 { $p90 } · p99 { $p99 } · max { $max }
term-first-error = 第一个错误：{ $error }
term-captured = 抓包
term-read = 读取
term-capture-line = { $packets } 个分组（丢弃 { $drops } 个），{ $conns } 个连接，{ $exchanges } 个{ $http ->
    [yes] {" "}HTTP 交换
   *[no] 交换
}
term-handshake-rtt = ；握手 RTT { $rtt }
term-exchange-line = 交换延迟 p50 { $p50 } · p99 { $p99 }；服务端耗时 p50 { $server }{ $rtt }
term-exchanges-turns = 交换按方向切换划分（载荷不是 HTTP/1.x）
term-exchanges-mixed = 交换按 HTTP/1.x 请求和方向切换划分（混合）
term-pcap-written = 分组已写入 { $path }
term-warning = 警告：
term-sockets = 服务端套接字
term-sockets-listen-only = { $process }（pid { $pid }）：采样时只有监听套接字是打开的，没有可显示选项的连接
term-sockets-line = { $process }（pid { $pid }）：采样的 { $n } 个连接中 { $off } 个关闭了 TCP_NODELAY，{ $corked } 个开启了 TCP_CORK
term-kernel = 内核计数器
term-nothing = 无（见下方的检查）
term-bd-line = 典型请求（p50）{ $latency } = { $parts }
term-bd-network = 网络 { $v }
term-bd-server = 服务端 { $v }
term-bd-transfer = 传输 { $v }
term-stall-nagle = Nagle/延迟确认
term-stall-delayed-ack = 延迟确认停顿
term-stall-loss = 丢包恢复
term-stall-rto = 重传超时
term-stall-zero-window = 零窗口
term-verdict = 结论：
term-verdict-problem = { $n } 项发现；第一项解释了大部分延迟
term-verdict-healthy = 检查范围内没有发现问题
term-verdict-inconclusive = 观察到的数据不足以判断；见下方的检查
term-finding-meta = （{ $layer }，需修改的一方：{ $side }，置信度 { $confidence }）
term-why = 原因：
term-evidence = 证据：
term-fix = 修复：
term-ev-connection = 连接 { $connection }
term-ev-counter = 计数器 { $name }：{ $before } → { $after }
term-ev-socket = pid { $pid } 的套接字（fd { $fd }）：{ $option } = { $value }
term-ev-probe = 探测 { $probe }：
term-ev-log = 内核日志：{ $line }
term-checks = 检查

## 两次运行对比（demo）

cmp-syn = SYN RTT（中位数）
cmp-one-request = 单个请求（总计）
cmp-rps = 负载下每秒请求数
cmp-p50 = 负载下延迟 p50
cmp-p99 = 负载下延迟 p99
cmp-verdict = 结论

## HTML 报告（来自报告的参数已做 HTML 转义）

html-not-measured = 未测量：{ $what }。
html-not-measured-because = 未测量：{ $what }（{ $reason }）。
html-footer = netdoctor { $version } · 报告格式 { $schema } · 本页面自包含：没有脚本，不加载任何外部资源
html-headline-problem = 发现了问题
html-headline-healthy = 没有发现问题：没有高于“提示”级别的发现
html-headline-inconclusive = 证据不足，无法判定为健康：见下方的检查
html-finding-counts = { $n } 项发现：严重 { $critical }，警告 { $warning }，提示 { $info }
html-took = 耗时 { $s } s
html-findings = 发现
html-no-findings = 没有发现。
html-finding-meta = { $layer } · 需修改的一方：{ $side } · 置信度 { $confidence } %
html-impact = 影响：{ $impact }
html-impact-adds = 每个受影响的请求增加 { $ms }
html-impact-affected = { $pct } % 的请求受影响
html-fix = 修复
html-ev-counter = 计数器 <code>{ $name }</code>：{ $before } → { $after }（{ $change }）
html-ev-socket = 套接字选项 <code>{ $option }</code> = <code>{ $value }</code>（pid { $pid }，fd { $fd }）
html-ev-probe = 探测 { $probe }：
html-ev-log = 内核日志 <code>{ $line }</code>
html-ev-packets = { $n } 个连接上的分组：<a href="{ $href }">见下方的流图</a>
html-packet-evidence = 分组证据
html-no-packet-finding = 没有基于分组的发现：无需绘制流图。
html-ladder-title = 连接 { $connection } 上的 <code>{ $id }</code>
html-more-connections = 另有 { $n } 个连接有相同的证据
html-th-connection = 连接
html-th-frames = 帧号
html-th-packets-show = 分组说明了什么
html-latency = 延迟分布
html-load-lead = { $connections } 个连接，{ $duration } s 内完成 { $requests } 个请求（{ $rps } 请求/秒）：p50 <b>{ $p50 }</b>，p90 { $p90 }，p99 <b>{ $p99 }</b>，最大 { $max }。
html-histogram-caption = 请求耗时的分布（对数刻度，每个桶宽 12 %；鼠标悬停在柱上可看到数量）
html-histogram = 延迟直方图
html-no-request-completed = 没有请求完成
html-no-histogram-data = 本报告没有直方图数据
html-curve-caption = 百分位曲线：给定比例的请求的延迟不超过该值；右侧是长尾
html-load = 负载
html-capture-lead = 抓包中：{ $n } 个 HTTP 交换（在抓包点从请求的第一个字节到响应的最后一个字节）：p50 <b>{ $p50 }</b>，p90 { $p90 }，p99 <b>{ $p99 }</b>，最大 { $max }{ $rtt }。
html-handshake-rtt = ；握手 RTT { $rtt }
html-baseline-syn = TCP 握手 RTT <b>{ $rtt }</b>（{ $answered } 个应答的中位数，{ $method }）
html-baseline-http = 单个请求 <b>{ $total }</b>（建连 { $connect }，首字节 { $first }，HTTP { $status }）
html-baseline = 加负载之前，单独测量：{ $parts }。
html-list-sep = ；
html-status-lead = 按状态码统计的响应：{ $codes }。错误：<b>{ $total }</b>
html-none = 无
html-error-kinds = （建连 { $connect }，读 { $read }，写 { $write }，超时 { $timeout }，HTTP 状态码 { $status }）
html-first-error = ；第一个：<code>{ $error }</code>
html-end = 。
html-over-time = 运行过程
html-timeline-caption = 每秒请求数（红色为错误）以及每秒响应的延迟
html-no-per-second = 本报告没有逐秒数据
html-timeline = 每秒请求数和延迟随时间的变化
html-tables = 抓包、计数器和套接字
html-capture = 抓包
html-th-packets = 分组
html-th-segments = TCP 分段
html-th-connections = 连接
html-with-handshake = 其中 { $n } 个有握手
html-th-duration = 时长
html-th-retransmitted = 重传的分段
html-th-dropped = 被内核丢弃
html-counters = 运行期间变化的内核计数器
html-th-counter = 计数器
html-th-before = 之前
html-th-after = 之后
html-th-change = 变化
html-no-counter-changed = 运行期间没有计数器发生变化。
html-kernel-counters = 内核计数器
html-sockets = 服务端的套接字选项
html-th-process = 进程
html-th-state = 状态
html-th-local = 本地地址
html-nodelay-on = 开启（Nagle 算法关闭）
html-nodelay-off = 关闭（Nagle 算法开启）
html-socket-options = 套接字选项
html-offline = 离线分析抓包文件
html-not-local = 服务端不是本机上的进程，或者没有读取到
html-breakdown = 一个请求的时间花在了哪里
html-bar-typical = 典型请求（p50）
html-bar-mean = 所有请求的平均
html-breakdown-caption = 每个请求的延迟拆分为网络 RTT、服务端处理时间、传输字节的时间，以及按原因划分的停顿（来自抓包）
html-no-complete-exchange = 抓包中没有完整的 HTTP 交换
html-per-request-breakdown = 单个请求的时间拆分
html-checks = 检查
html-th-check = 检查项
html-th-status = 状态
html-th-note = 说明

## HTML 图表和流图

chart-histogram = 延迟直方图
chart-latency-log = 延迟（ms，对数刻度）
chart-requests = 请求数
chart-curve = 延迟百分位曲线
chart-percentile = 百分位（延迟不超过该值的请求比例）
chart-timeline = 运行过程中的每秒请求数和延迟
chart-rps = 请求/秒
chart-latency-ms = 延迟（ms）
chart-time = 自负载开始以来的时间
chart-part-network = 网络（一个 RTT）
chart-part-server = 服务端处理
chart-part-transfer = 传输
chart-part-stall = 停顿：{ $id }
chart-breakdown = 单个请求的时间拆分
ladder-title = { $connection } 的流图：{ $n } 个分组
ladder-frame-time = 帧号 · 时间
ladder-gap = 间隔 { $ms }
ladder-in-flight = 在途，等待它的 ACK
ladder-late-ack = 迟到的 ACK：延迟确认定时器到期
ladder-held = 被扣住的分段：Nagle 算法一直扣到 ACK 到达
ladder-next = 下一个分段：等待 ACK
ladder-original = 原始发送
ladder-retransmission = 重传
ladder-window-zero = 通告零窗口
ladder-window-reopened = 窗口重新打开
ladder-request-complete = 请求完整
ladder-first-byte = 响应的第一个字节
ladder-gap-delayed-ack = 延迟确认：接收方的 ACK 定时器（Linux 上 ≥ 40 ms）
ladder-gap-rto = 重传超时（RTO，≥ 200 ms）
ladder-gap-loss = 等待重传丢失的分段
ladder-gap-zero-window = 接收窗口关闭：发送方不能发送
ladder-gap-server = 服务端处理时间
ladder-gap-syn = SYN / SYN-ACK 重传定时器（1 s）
ladder-gap-longest = 最长的间隔

## netdoctor demo

demo-server-nginx = nginx（真实的 nginx）
demo-server-builtin = netdoctor 内置的参考服务器（不是 nginx）
demo-intro-1 = 参考案例：同一个服务器、同一个页面测两次，一次 `tcp_nodelay on;`，一次
demo-intro-2 = `tcp_nodelay off;`，从另一个网络命名空间用 { $connections } 个 keep-alive 连接施加负载。
demo-server = 服务器：{ $server }。
demo-same-alone = 单个请求和 SYN RTT 在两者上看起来一样；只有在并发下才显出差别。
demo-full-report = netdoctor 对慢服务器的完整报告：
demo-as-expected = 快的服务器结论为健康；慢的服务器的根因从它的分组中找到了。
demo-try-it = 自己试试：`netdoctor lab start`，然后 `netdoctor diagnose --netns netdoctor-cli http://…`。
demo-unexpected = 演示结果与预期不符（tcp_nodelay on：{ $on }，off：{ $off }）。在非常繁忙的机器上，
demo-unexpected-2 = 负载可能触发不了停顿；运行 `netdoctor demo --json` 查看详情。
demo-no-finding = 没有发现
