# The tree's layout rules (tools/check_layout.py): no source file over 1,500
# lines (tests/ included), no function over 150 lines (tests/ too), no file outside
# format/ (replay/) including a header internal to it but the white-box
# tests it names.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
	add_test(NAME layout_limits
		COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/check_layout.py
			${PROJECT_SOURCE_DIR})
	set_tests_properties(layout_limits PROPERTIES LABELS "layout" TIMEOUT 60)
endif()
